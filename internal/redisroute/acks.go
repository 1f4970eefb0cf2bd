package redisroute

import (
	"context"
	"errors"
	"sync"
)

// A write asked to be acknowledged by Acks replicas WAITs for every
// replica of its shard that is in step, at least Acks, and a WAIT that
// falls short of them but not of Acks is accepted only once none of them
// reports itself a primary.
//
// Why all of them: a forced failover (CLUSTER FAILOVER FORCE on a replica
// while its primary is up) promotes the replica with whatever it has
// received, and the old primary goes on taking writes for the 10 to 45 ms
// before it learns it was replaced, which its other replicas, still
// attached, acknowledge; then they all copy the new primary. WAIT counts
// replicas, it cannot choose them: with one ack of two, every write of
// that window, and any the promoted replica had not yet received, was
// reported done and lost (redisstore's forced_failover_test.go). Asked of
// every replica, such a write is acknowledged by fewer than asked, and the
// promoted replica says so.
//
// What it costs: nothing while every replica keeps up (WAIT returns when
// the last one acknowledges, on loopback within a millisecond of the
// first). When one fails or falls behind, the writes to its shard then in
// flight wait AckTimeout, and the replicas are asked their ROLE; those down,
// hung or behind the others are skipped by later WAITs until a replication
// check asked after then finds them in step. What it leaves: a forced
// failover of a replica already behind, or skipped, still drops what it
// missed.

// errReplaced says why a write short of its replicas was not accepted.
var errReplaced = errors.New("fewer replicas acknowledged than are in step, and one of them reports itself a primary: a forced failover may drop what this primary takes")

// ackTarget is how many replicas a WAIT on n asks for, with acks the
// fewest the caller accepts, and the replicas in step it counts: n's
// shard's replicas that are neither ejected, behind nor skipped. Only for
// n as its shard's primary, and not under legacy-2019, which has no
// replication check to find them in step.
func (r *Router) ackTarget(n *node, acks int) (int, []*node) {
	if r.cfg.Policy == Legacy2019 {
		return acks, nil
	}
	s := r.topo.Load().shardOf(n)
	if s == nil || s.primary != n {
		return acks, nil
	}
	var inStep []*node
	for _, x := range s.replicas {
		if !x.ejected.Load() && !x.behind.Load() && x.ackSkippedAt.Load() == 0 {
			inStep = append(inStep, x)
		}
	}
	return max(acks, len(inStep)), inStep
}

// promotedAmong asks each replica its ROLE, within AckTimeout, after a WAIT
// went short of them: whether one reports itself a primary. When none
// does, the ones that did not answer, are not connected to their primary
// or are behind another that answered are skipped by later WAITs (see
// ackTarget). When one does, none is skipped: the others acknowledged a
// primary that is being replaced, and later writes to it must fall short
// again.
func (r *Router) promotedAmong(ctx context.Context, replicas []*node) bool {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AckTimeout)
	defer cancel()
	roles := make([]replicaRole, len(replicas))
	var wg sync.WaitGroup
	for i, x := range replicas {
		wg.Go(func() { roles[i] = askRole(ctx, x) })
	}
	wg.Wait()
	var most int64
	for _, ro := range roles {
		if ro.primary {
			r.requestRefresh(refreshReplicaPromoted)
			return true
		}
		most = max(most, ro.offset)
	}
	now := r.clock.Now().UnixNano()
	for i, ro := range roles {
		if !ro.connected || ro.offset < most {
			replicas[i].ackSkippedAt.CompareAndSwap(0, now)
		}
	}
	return false
}

// replicaRole is what ROLE says of a node asked as a replica.
type replicaRole struct {
	primary   bool  // it says it is one
	connected bool  // a replica whose link to its primary is up
	offset    int64 // a replica's replication offset
}

// askRole asks x its ROLE; an error or an answer it cannot read says
// nothing (neither primary nor connected), nor does a node without a
// probe client (a scripted one, in tests).
func askRole(ctx context.Context, x *node) replicaRole {
	if x.probe == nil {
		return replicaRole{}
	}
	v, err := x.probe.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return replicaRole{}
	}
	switch v[0] {
	case "master":
		return replicaRole{primary: true}
	case "slave":
		// slave, primary's host, its port, link state, offset.
		if len(v) < 5 {
			return replicaRole{}
		}
		offset, _ := v[4].(int64)
		return replicaRole{connected: v[3] == "connected", offset: offset}
	}
	return replicaRole{}
}
