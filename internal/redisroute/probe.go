package redisroute

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ProbeShards reads one key on every shard, through the read policy, and
// returns how many answered and an error naming the shards that did not.
func (r *Router) ProbeShards(ctx context.Context) (answered int, err error) {
	t := r.topo.Load()
	var cmds []Cmd
	for _, s := range t.shards {
		cmds = append(cmds, Read("EXISTS", keyOnShard(t, s, probePrefix)))
	}
	var errs []error
	for i, res := range r.Exec(ctx, cmds) {
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("shard of %s: %w", t.shards[i].primary.addr, res.Err))
			continue
		}
		answered++
	}
	return answered, errors.Join(errs...)
}

// ReachPrimaries pings every shard's primary over a connection kept for
// it, apart from the requests' pools, fail-fast, ejection and the other
// checks (so a busy instance and an idle one judge alike), and returns
// the slot ranges ([first, last]) whose primary answered, with an error
// naming those that did not. An answer that is the node's state counts
// (MISCONF, BUSY, LOADING, OOM, and a greeting at maxclients: every
// instance meets it alike); a refusal of this instance's credentials does
// not. It measures this process's path to each primary: compared with the
// other instances' (fleet.Reach), it tells a path of this instance's own
// that is cut from a node that is down.
func (r *Router) ReachPrimaries(ctx context.Context) (reached [][2]int, err error) {
	t := r.topo.Load()
	answered := make([]bool, len(t.shards))
	errs := make([]error, len(t.shards))
	var wg sync.WaitGroup
	for i, s := range t.shards {
		wg.Go(func() {
			perr := s.primary.reach.Ping(ctx).Err()
			answered[i] = nodeAnswered(perr)
			if !answered[i] {
				errs[i] = fmt.Errorf("primary %s: %w", s.primary.addr, perr)
			}
		})
	}
	wg.Wait()
	ok := map[*shard]bool{}
	for i, s := range t.shards {
		ok[s] = answered[i]
	}
	for slot, s := range t.slots {
		switch {
		case s == nil || !ok[s]:
		case len(reached) > 0 && reached[len(reached)-1][1] == slot-1:
			reached[len(reached)-1][1] = slot
		default:
			reached = append(reached, [2]int{slot, slot})
		}
	}
	return reached, errors.Join(errs...)
}

// nodeAnswered reports whether err, from a PING, is an answer of the
// node's own state rather than no answer or a refusal of this client.
func nodeAnswered(err error) bool {
	var reply redis.Error
	switch {
	case err == nil, isFull(err):
		return true
	case isRefusal(err):
		return false
	default:
		return errors.As(err, &reply)
	}
}

// RequestRefresh asks for a new slot map, from the refresh loop, as an
// error that suggests the map is old does.
func (r *Router) RequestRefresh() { r.requestRefresh(refreshReach) }

// ShardKeys returns, for every shard of the current topology, a key
// prefix+"{n}" whose slot it serves: a record kept on every shard, so that
// whoever reaches any shard finds one.
func (r *Router) ShardKeys(prefix string) []string {
	t := r.topo.Load()
	keys := make([]string, len(t.shards))
	for i, s := range t.shards {
		keys[i] = keyOnShard(t, s, prefix)
	}
	return keys
}

// probePrefix names the keys probes read (and Barrier writes).
const probePrefix = "apollo:probe:"

// keyOnShard finds a key prefix+"{n}" whose slot belongs to s.
func keyOnShard(t *topology, s *shard, prefix string) string {
	for i := 0; ; i++ {
		k := prefix + "{" + strconv.Itoa(i) + "}"
		if t.slots[Slot(k)] == s {
			return k
		}
	}
}

// Barrier returns once every shard's primary has had its writes so far
// acknowledged by acks replicas: a marker write with WAIT on each shard,
// whose replication offset covers every earlier write to that primary.
func (r *Router) Barrier(ctx context.Context, acks int) error {
	t := r.topo.Load()
	var cmds []Cmd
	for _, s := range t.shards {
		c := Write("SET", keyOnShard(t, s, probePrefix), "barrier")
		c.Acks = acks
		cmds = append(cmds, c)
	}
	return r.Exec(ctx, cmds).Err()
}
