package redisroute

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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

// ReachPrimaries reads one key from every shard's primary (never a
// replica) and returns how many of the cluster's slots are served by a
// primary that answered, of the slots the topology covers, with an error
// naming the primaries that did not: how much of the cluster this process
// can write to. Compared with other instances' (fleet.Reach), it tells a
// path of this instance's own that is cut from a node that is down.
func (r *Router) ReachPrimaries(ctx context.Context) (reached, covered int, err error) {
	t := r.topo.Load()
	cmds := make([]Cmd, len(t.shards))
	for i, s := range t.shards {
		k := keyOnShard(t, s, probePrefix)
		cmds[i] = Cmd{Args: []any{"EXISTS", k}, Key: k, Fresh: true}
	}
	slots := map[*shard]int{}
	for _, s := range t.slots {
		if s != nil {
			slots[s]++
			covered++
		}
	}
	var errs []error
	for i, res := range r.Exec(ctx, cmds) {
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("primary %s: %w", t.shards[i].primary.addr, res.Err))
			continue
		}
		reached += slots[t.shards[i]]
	}
	return reached, covered, errors.Join(errs...)
}

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
