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
// reserve one driver. It reads no clock but the deadline guard's (lateGuard).
// A hash without an expiry (a driver that went on line before its first
// heartbeat) gets the driver TTL, so no driver record lives for ever.
// KEYS[1] driver hash; ARGV[1] expected version; ARGV[2] TTL ms; ARGV[3..]
// field, value pairs. Returns {1, new version} or {0, current version}.
const casScript = `
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then return {0, v} end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'v', v + 1)
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, v + 1}
`

// heartbeatScript records a location unless a newer heartbeat is already
// stored (heartbeats can arrive out of order), creating an offline driver
// on first sight, and pushes the hash's expiry TTL ms out: a driver silent
// that long is forgotten (see Config.DriverTTL). It leaves the version
// alone so that a heartbeat never makes a concurrent reservation fail.
// KEYS[1] driver hash; ARGV id, lat, lng, heartbeat ms, cell, TTL ms.
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
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return {1, old, st}
`

// indexScript is a heartbeat's write to its cell: the driver joins the geo
// set if available and leaves it if not, its liveness is raised to this
// heartbeat (GT: a late index write never lowers it), and up to a bounded
// number of members whose liveness is older than the cutoff leave both
// sets, so every heartbeat sweeps a little and none does much.
// KEYS[1] geo set, KEYS[2] liveness set, of one cell; ARGV id, lng, lat,
// heartbeat ms, available 1/0, stale cutoff ms, sweep limit.
// Returns the number of members swept.
const indexScript = `
if ARGV[5] == '1' then
  redis.call('GEOADD', KEYS[1], ARGV[2], ARGV[3], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
redis.call('ZADD', KEYS[2], 'GT', ARGV[4], ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[6], 'LIMIT', 0, tonumber(ARGV[7]))
if #dead > 0 then
  redis.call('ZREM', KEYS[1], unpack(dead))
  redis.call('ZREM', KEYS[2], unpack(dead))
end
return #dead
`

// sweepScript takes members out of a cell's geo and liveness sets unless
// the liveness set has heard from them since the cutoff: the caller's
// evidence (a stale or missing record, a move to another cell) was read
// before this runs, and a heartbeat that landed in between wins.
// KEYS[1] geo set, KEYS[2] liveness set, of one cell; ARGV cutoff ms, ids.
// Returns the number of members taken out of the geo set.
const sweepScript = `
local cutoff = tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  local hb = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if not hb or tonumber(hb) < cutoff then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
    redis.call('ZREM', KEYS[2], ARGV[i])
  end
end
return n
`

// claimScript takes up to ARGV[3] members due by ARGV[1] (ms) and makes
// them due again at ARGV[2]: a claim, so two scans (of one instance or of
// several) do not work on one member at once, and a member whose handling
// fails comes back only after the hold, behind the others. Used by the
// open-bookings index and the reserved-drivers index.
const claimScript = `
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return ids
`

// zremIfScoreScript removes ARGV[1] from the sorted set only if its score
// is still ARGV[2]: a member re-added since (a new reservation) stays.
const zremIfScoreScript = `
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) == tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
`

// script is a Lua script run by SHA, loaded on first NOSCRIPT.
type script struct {
	src, sha string
	// guarded: the script starts with lateGuard, and its commands carry
	// the caller's deadline as their first argument (see exec).
	guarded bool
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// newGuardedScript is a script that does nothing when it runs after its
// caller's deadline (see lateGuard).
func newGuardedScript(src string) script {
	s := newScript(lateGuard + src)
	s.guarded = true
	return s
}

// cmd is the script as a write on key's shard, run by SHA.
func (s script) cmd(key string, args ...any) redisroute.Cmd {
	return s.cmdKeys([]string{key}, args...)
}

// cmdKeys is the script as a write on keys that share a slot (the first
// one routes it), run by SHA. A guarded script's first argument is a slot
// for the deadline, which exec fills.
func (s script) cmdKeys(keys []string, args ...any) redisroute.Cmd {
	a := make([]any, 0, 4+len(keys)+len(args))
	a = append(a, "EVALSHA", s.sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	if s.guarded {
		a = append(a, unfilledDeadline)
	}
	return redisroute.Cmd{Args: append(a, args...), Key: keys[0], Write: true}
}

// exec runs script commands (built with cmd) in one pipeline; a guarded
// script's commands carry ctx's deadline, in the clock of the primary
// each goes to. A NOSCRIPT reply means nothing ran, so those commands are
// sent again with the source, which is safe even for writes.
func (s script) exec(ctx context.Context, r router, cmds []redisroute.Cmd) redisroute.Results {
	if s.guarded {
		deadline := notAfter(ctx)
		for _, c := range cmds {
			c.Args[3+c.Args[2].(int)] = deadlineArg(deadline, r.ClockOffset(c.Key))
		}
	}
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
