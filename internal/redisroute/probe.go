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
		cmds = append(cmds, Read("EXISTS", keyOnShard(t, s)))
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

// keyOnShard finds a key whose slot belongs to s.
func keyOnShard(t *topology, s *shard) string {
	for i := 0; ; i++ {
		k := "apollo:probe:{" + strconv.Itoa(i) + "}"
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
		c := Write("SET", keyOnShard(t, s), "barrier")
		c.Acks = acks
		cmds = append(cmds, c)
	}
	return r.Exec(ctx, cmds).Err()
}
