package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// casScript writes a driver's state fields only if its version is still the
// one the caller read, and bumps the version: two bookings can never both
// reserve one driver. Deterministic: no time, no randomness.
// KEYS[1] driver hash; ARGV[1] expected version; ARGV[2..] field, value pairs.
// Returns {1, new version} or {0, current version}.
const casScript = `
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then return {0, v} end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'v', v + 1)
return {1, v + 1}
`

// heartbeatScript records a location unless a newer heartbeat is already
// stored (heartbeats can arrive out of order), creating an offline driver
// on first sight. It leaves the version alone so that a heartbeat never
// makes a concurrent reservation fail.
// KEYS[1] driver hash; ARGV id, lat, lng, heartbeat ms, cell.
// Returns {applied 0/1, previous cell, status}.
const heartbeatScript = `
local hb = tonumber(redis.call('HGET', KEYS[1], 'hb') or '-1')
local old = redis.call('HGET', KEYS[1], 'cell') or ''
local st = redis.call('HGET', KEYS[1], 'st') or 'offline'
if hb > tonumber(ARGV[4]) then return {0, old, st} end
if redis.call('HEXISTS', KEYS[1], 'id') == 0 then
  redis.call('HSET', KEYS[1], 'id', ARGV[1], 'st', 'offline', 'svc', '', 'v', 0)
end
redis.call('HSET', KEYS[1], 'lat', ARGV[2], 'lng', ARGV[3], 'hb', ARGV[4], 'cell', ARGV[5])
return {1, old, st}
`

// script is a Lua script run by SHA, loaded on first NOSCRIPT.
type script struct {
	src, sha string
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// cmd is the script as a write on key's shard, run by SHA.
func (s script) cmd(key string, args ...any) redisroute.Cmd {
	return redisroute.Cmd{Args: append([]any{"EVALSHA", s.sha, 1, key}, args...), Key: key, Write: true}
}

// exec runs script commands (built with cmd) in one pipeline. A NOSCRIPT
// reply means nothing ran, so those commands are sent again with the
// source, which is safe even for writes.
func (s script) exec(ctx context.Context, r router, cmds []redisroute.Cmd) redisroute.Results {
	res := r.Exec(ctx, cmds)
	var again []int
	for i, x := range res {
		if x.Err != nil && strings.Contains(x.Err.Error(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	retry := make([]redisroute.Cmd, len(again))
	for k, i := range again {
		retry[k] = cmds[i]
		retry[k].Args = append([]any{"EVAL", s.src}, cmds[i].Args[2:]...)
	}
	for k, x := range r.Exec(ctx, retry) {
		res[again[k]] = x
	}
	return res
}

// run executes the script once on key's shard.
func (s script) run(ctx context.Context, r router, key string, args ...any) redisroute.Result {
	return s.exec(ctx, r, []redisroute.Cmd{s.cmd(key, args...)})[0]
}
