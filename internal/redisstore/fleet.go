package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// The fleet's members:
//
//	apollo:fleet   zset   live instances, scored by when each heartbeat runs out (ms)
//
// The leases are per partition (see Partitions).
const fleetKey = "apollo:fleet"

// memberScript announces ARGV[2] until ARGV[1] (ms) and drops members
// whose announcement ran out before ARGV[3].
const memberScript = `
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
return 1
`

// acquireScript takes a free lease (KEYS[1]) for ARGV[1] for ARGV[2] ms,
// with the partition's next fencing number (KEYS[2]): the token, or false
// when the lease is held.
const acquireScript = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = ARGV[1] .. ':' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return token
`

// renewScript extends a lease still holding token ARGV[1] to ARGV[2] ms: 1, or 0 if lost.
const renewScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`

// releaseScript deletes a lease still holding token ARGV[1]: 1, or 0.
const releaseScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`

// Fleet implements fleet.Store on Redis. Leases are plain writes, not
// acknowledged by replicas: a failover that undoes one lets two instances
// claim from one partition for a while, which the claims' visibility
// window and the bookings' version checks make harmless.
type Fleet struct {
	r                                  router
	ps                                 Partitions
	heartbeat, acquire, renew, release script
}

// NewFleet returns the fleet store over the partitions ps.
func NewFleet(r router, ps Partitions) *Fleet {
	return &Fleet{r: r, ps: ps, heartbeat: newScript(memberScript), acquire: newScript(acquireScript),
		renew: newScript(renewScript), release: newScript(releaseScript)}
}

var _ fleet.Store = (*Fleet)(nil)

// Heartbeat implements fleet.Store.
func (f *Fleet) Heartbeat(ctx context.Context, id string, now, until time.Time) error {
	return storeErr(f.heartbeat.run(ctx, f.r, fleetKey, until.UnixMilli(), id, now.UnixMilli()).Err)
}

// Members implements fleet.Store: read from the primary, so that a
// member's own heartbeat is in the list it reads next.
func (f *Fleet) Members(ctx context.Context, now time.Time) ([]string, error) {
	res := f.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"ZRANGE", fleetKey, now.UnixMilli(), "+inf", "BYSCORE"}, Key: fleetKey, Fresh: true}})[0]
	if res.Err != nil {
		return nil, storeErr(res.Err)
	}
	vals, _ := res.Val.([]any)
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// Leave implements fleet.Store.
func (f *Fleet) Leave(ctx context.Context, id string) error {
	return storeErr(f.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZREM", fleetKey, id)}).Err())
}

// Acquire implements fleet.Store.
func (f *Fleet) Acquire(ctx context.Context, p int, id string, ttl time.Duration) (fleet.Lease, bool, error) {
	res := f.acquire.exec(ctx, f.r, []redisroute.Cmd{f.acquire.cmdKeys([]string{f.ps.leaseKey(p), f.ps.fenceKey(p)}, id, ttl.Milliseconds())})[0]
	if res.Err != nil && !errors.Is(res.Err, redis.Nil) {
		return fleet.Lease{}, false, storeErr(res.Err)
	}
	if res.Val == nil { // false: held
		return fleet.Lease{}, false, nil
	}
	token, ok := res.Val.(string)
	if !ok {
		return fleet.Lease{}, false, fmt.Errorf("acquire lease: unexpected reply %v", res.Val)
	}
	return fleet.Lease{Partition: p, Token: token}, true, nil
}

// Renew implements fleet.Store: one pipeline per shard.
func (f *Fleet) Renew(ctx context.Context, leases []fleet.Lease, ttl time.Duration) ([]bool, error) {
	cmds := make([]redisroute.Cmd, len(leases))
	for i, l := range leases {
		cmds[i] = f.renew.cmd(f.ps.leaseKey(l.Partition), l.Token, ttl.Milliseconds())
	}
	kept := make([]bool, len(leases))
	var errs []error
	for i, res := range f.renew.exec(ctx, f.r, cmds) {
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("renew partition %d: %w", leases[i].Partition, storeErr(res.Err)))
			continue
		}
		n, _ := res.Val.(int64)
		kept[i] = n == 1
	}
	return kept, errors.Join(errs...)
}

// Release implements fleet.Store.
func (f *Fleet) Release(ctx context.Context, l fleet.Lease) error {
	return storeErr(f.release.run(ctx, f.r, f.ps.leaseKey(l.Partition), l.Token).Err)
}

// Fence is the fencing number in a lease token.
func Fence(token string) (int64, error) {
	for i := len(token) - 1; i >= 0; i-- {
		if token[i] == ':' {
			return strconv.ParseInt(token[i+1:], 10, 64)
		}
	}
	return 0, fmt.Errorf("lease token %q has no fencing number", token)
}

// partitionsKey holds the partition count of the fleet's open index, set
// by the first instance: every instance must use it, or each would file
// and look for bookings in partitions of its own.
const partitionsKey = "apollo:fleet:partitions"

// ErrPartitionsDiffer: this instance's partition count is not the fleet's.
var ErrPartitionsDiffer = errors.New("partition count differs from the fleet's")

// Agree records the partition count if none is, and fails with
// ErrPartitionsDiffer if another one is recorded.
func (f *Fleet) Agree(ctx context.Context) error {
	res := f.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", partitionsKey, f.ps.Count(), "NX", "GET")})[0]
	if res.Err != nil && !errors.Is(res.Err, redis.Nil) {
		return storeErr(res.Err)
	}
	if res.Val == nil {
		return nil // recorded now
	}
	cur, _ := res.Val.(string)
	if cur != strconv.Itoa(f.ps.Count()) {
		return fmt.Errorf("%w: the open index in Redis has %s partitions, this instance was given %d; "+
			"run every instance with --partitions %s (changing it needs every instance stopped and the key %s deleted: "+
			"bookings open then stay in the old partitions)", ErrPartitionsDiffer, cur, f.ps.Count(), cur, partitionsKey)
	}
	return nil
}
