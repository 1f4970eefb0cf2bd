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
// returns how many served it, how many answered with an error of the
// node's state instead (isNodeState: CLUSTERDOWN, LOADING, BUSY, ...:
// every client that reaches the node meets it alike), and an error naming
// the shards that did not serve it. No reply, or a refusal of this client
// (its credentials, a node at maxclients), is neither.
func (r *Router) ProbeShards(ctx context.Context) (served, stated int, err error) {
	t := r.topo.Load()
	var cmds []Cmd
	for _, s := range t.shards {
		cmds = append(cmds, Read("EXISTS", keyOnShard(t, s, probePrefix)))
	}
	var errs []error
	for i, res := range r.Exec(ctx, cmds) {
		switch {
		case res.Err == nil:
			served++
			continue
		case isNodeState(res.Err):
			stated++
		}
		errs = append(errs, fmt.Errorf("shard of %s: %w", t.shards[i].primary.addr, res.Err))
	}
	return served, stated, errors.Join(errs...)
}

// ReachPrimaries pings every shard's primary over a connection kept for
// it, apart from the requests' pools, fail-fast, ejection and the other
// checks (so a busy instance and an idle one judge alike), and returns
// the slot ranges ([first, last]) whose primary answered, the addresses of
// the primaries that answered and of those that did not, with an error
// naming the latter. An answer that is the node's state counts (MISCONF,
// BUSY, LOADING, OOM, and a greeting at maxclients: every instance meets
// it alike); a refusal of this instance's credentials does not. It
// measures this process's path to each primary: compared with the other
// instances' (fleet.Reach), it tells a path of this instance's own that
// is cut from a node that is down.
func (r *Router) ReachPrimaries(ctx context.Context) (reached [][2]int, answered, unanswered []string, err error) {
	t := r.topo.Load()
	primaries := make([]*node, len(t.shards))
	for i, s := range t.shards {
		primaries[i] = s.primary
	}
	ok, errs := pingReach(ctx, primaries)
	byShard := map[*shard]bool{}
	for i, s := range t.shards {
		byShard[s] = ok[i]
		if ok[i] {
			answered = append(answered, s.primary.addr)
		} else {
			unanswered = append(unanswered, s.primary.addr)
		}
	}
	for slot, s := range t.slots {
		switch {
		case s == nil || !byShard[s]:
		case len(reached) > 0 && reached[len(reached)-1][1] == slot-1:
			reached[len(reached)-1][1] = slot
		default:
			reached = append(reached, [2]int{slot, slot})
		}
	}
	return reached, answered, unanswered, errors.Join(errs...)
}

// Unanswered pings those of addrs that are nodes of the current view, as
// ReachPrimaries does its primaries, and returns the ones that did not
// answer. Another instance's view may name a primary this one holds a
// replica, or does not know yet: one it does not know is left out, as
// nothing can be said of this process's path to it.
func (r *Router) Unanswered(ctx context.Context, addrs []string) []string {
	in := r.topo.Load().byAddr()
	var nodes []*node
	for _, a := range addrs {
		if n, ok := in[a]; ok {
			nodes = append(nodes, n)
		}
	}
	ok, _ := pingReach(ctx, nodes)
	var out []string
	for i, n := range nodes {
		if !ok[i] {
			out = append(out, n.addr)
		}
	}
	return out
}

// pingReach pings each node over its reach connection, at once, and
// reports which answered (nodeAnswered), with an error for each that did
// not.
func pingReach(ctx context.Context, nodes []*node) (answered []bool, errs []error) {
	answered, errs = make([]bool, len(nodes)), make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			perr := n.reach.Ping(ctx).Err()
			answered[i] = nodeAnswered(perr)
			if !answered[i] {
				errs[i] = fmt.Errorf("node %s: %w", n.addr, perr)
			}
		})
	}
	wg.Wait()
	return answered, errs
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

// SameShard reports whether the current topology serves keys a and b from
// one shard, so that a write of both needs no other: false while either's
// slot is served by none.
func (r *Router) SameShard(a, b string) bool {
	t := r.topo.Load()
	sa := t.slots[Slot(a)]
	return sa != nil && sa == t.slots[Slot(b)]
}
