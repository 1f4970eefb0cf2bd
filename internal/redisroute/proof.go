package redisroute

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// WAIT counts replicas; it cannot choose them. A forced failover
// (CLUSTER FAILOVER FORCE on a replica while its primary is up) promotes
// that replica with whatever it has received, and the old primary goes on
// taking writes for the 10-45 ms before it learns it was replaced: its
// other replica, still attached, acknowledges them, WAIT 1 is met, and
// they vanish when both copy the new primary (197-329 of 3,000-4,000
// creates answered created across one, redisstore's
// TestNoCreateReportedCreatedIsLostInAForcedFailover, before this).
//
// So a WAIT that met its count is not yet a proof. Every replica of the
// shard that the router has not ejected must also be shown to hold the
// write, or at least not to have been promoted without it:
//
//   - INFO replication on the primary, in the write's own pipeline right
//     after the writes, gives the primary's history (master_replid) and an
//     offset at or past the write's end; INFO replication again after the
//     WAIT lists each connected replica's acknowledged offset. A replica
//     listed at or past that offset holds the write: if it is promoted
//     later, the write goes with it.
//   - Any other replica is asked itself (INFO replication, through its
//     request pool, so that a hung one is found by the watchdog). One of
//     the same history at or past the offset holds the write. One that
//     answers as a primary may have been promoted without it, and one that
//     follows another history (it copies another primary) is past a
//     failover the write may not survive: the write is unconfirmed. One
//     that answers as this primary's replica but behind it is asked again,
//     a few times, a millisecond apart (the write may be on its way to it
//     while it is being promoted); still behind, it was not promoted when
//     asked, and the write goes on: a replica that lags its primary and is
//     then forced over loses what it lacked, whatever anyone counts
//     (README, Known limits).
//   - A replica that does not answer is unconfirmed, unless the router has
//     ejected it by then (a crashed replica refuses the connection and is
//     ejected at once; a hung one is ejected by the watchdog within
//     StallAfter): a node that is down cannot be promoted, and a write must
//     go on when one replica of two fails (redisstore's
//     TestCreatesGoOnWhenOneOfTwoReplicasFails).
//
// What this does not cover: an ejected replica that is alive, reachable by
// the cluster but not by this router, and forced over (two faults at once);
// a replica the router's slot map does not list yet.

// proofAsks is how many times a replica of the primary that is behind the
// write's offset is asked before it is let go as "not promoted".
const proofAsks = 3

// proofAskGap is the wait between two asks of a replica behind.
const proofAskGap = time.Millisecond

// errNotHeld is why a write whose WAIT met its count is unconfirmed anyway.
var errNotHeld = errors.New("a replica may have been promoted without the write")

// proof is the two INFO replication replies sent around an attempt's WAIT.
type proof struct {
	before, after *redis.StringCmd
}

// newProof returns the commands to send right before and right after an
// attempt's WAIT.
func newProof(ctx context.Context) proof {
	return proof{
		before: redis.NewStringCmd(ctx, "info", "replication"),
		after:  redis.NewStringCmd(ctx, "info", "replication"),
	}
}

// holds checks that every replica of a's shard that the router has not
// ejected holds what a wrote, or answers as a replica of a's node (see the
// comment at the top of this file). nil: the write stands.
func (r *Router) holds(ctx context.Context, a *attempt, p proof) error {
	if err := errors.Join(p.before.Err(), p.after.Err()); err != nil {
		return fmt.Errorf("%w: INFO replication on the primary failed: %v", errNotHeld, err)
	}
	before, after := parseReplication(p.before.Val()), parseReplication(p.after.Val())
	switch {
	case !before.primary || !after.primary:
		return fmt.Errorf("%w: %s is no longer a primary", errNotHeld, a.node.addr)
	case before.replid == "" || before.replid != after.replid:
		return fmt.Errorf("%w: %s changed its replication history during the write", errNotHeld, a.node.addr)
	}
	s := r.topo.Load().shardOf(a.node)
	if s == nil {
		return fmt.Errorf("%w: %s is not in the slot map, so its replicas are unknown", errNotHeld, a.node.addr)
	}
	var ask []*node
	for _, x := range s.nodes() {
		if x == a.node || !x.healthy() || listedAt(after.replicas, x.addr, before.offset) {
			continue
		}
		ask = append(ask, x)
	}
	if len(ask) == 0 {
		return nil
	}
	errs := make([]error, len(ask))
	var wg sync.WaitGroup
	for i, x := range ask[1:] {
		wg.Go(func() { errs[i+1] = r.replicaHolds(ctx, x, before, a.node.addr) })
	}
	errs[0] = r.replicaHolds(ctx, ask[0], before, a.node.addr)
	wg.Wait()
	return errors.Join(errs...)
}

// listedAt reports whether a primary's list has a replica at addr that
// acknowledged offset or more.
func listedAt(list []listedReplica, addr string, offset int64) bool {
	for _, l := range list {
		if exactEndpoint(l.addr, addr) && l.offset >= offset {
			return true
		}
	}
	return false
}

// replicaHolds asks x, a replica of the primary whose INFO replication
// (taken right after a write) is primary, whether it holds the write or
// at least is still that primary's replica, within AckTimeout.
func (r *Router) replicaHolds(parent context.Context, x *node, primary replication, primaryAddr string) error {
	ctx, cancel := context.WithTimeout(parent, r.cfg.AckTimeout)
	defer cancel()
	for ask := 1; ; ask++ {
		own, err := r.askReplicaInfo(ctx, x)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
				// Silent for AckTimeout while its primary answered: a
				// failed node, as a request that timed out would make it.
				// The watchdog may not have seen it: it blames no node
				// while no other answers either (a lone write).
				r.nodeFailed(x, classUnanswered, err)
			}
			if !x.healthy() {
				return nil // down (ejected): it cannot be promoted
			}
			return fmt.Errorf("%w: replica %s did not answer: %v", errNotHeld, x.addr, err)
		}
		switch v := replicaVerdict(own, primary, primaryAddr); {
		case v == replicaHolds:
			return nil
		case v == replicaBehind && (ask >= proofAsks || x.fellBehind()):
			return nil // a replica of this primary, not promoted when asked
		case v == replicaBehind:
			if err := r.sleep(ctx, proofAskGap); err != nil {
				return fmt.Errorf("%w: replica %s behind the write: %v", errNotHeld, x.addr, err)
			}
		default:
			return fmt.Errorf("%w: replica %s %s", errNotHeld, x.addr, v)
		}
	}
}

// A replica's answer, as replicaVerdict reads it.
const (
	replicaHolds     = "holds the write"
	replicaBehind    = "is behind the write"
	replicaPromoted  = "answers as a primary"
	replicaElsewhere = "follows another primary's history"
)

// replicaVerdict reads a replica's INFO replication against its primary's
// (at primaryAddr), taken right after a write. A replica that copies the
// primary's history at or past its offset holds the write. One that is
// behind it, or syncing from that primary afresh (after a failover, or a
// restart past the backlog: its history is still the old one until the
// copy is loaded), is behind.
func replicaVerdict(own, primary replication, primaryAddr string) string {
	switch {
	case own.primary:
		return replicaPromoted
	case own.replid == primary.replid && own.offset >= primary.offset:
		return replicaHolds
	case own.replid == primary.replid, exactEndpoint(own.master, primaryAddr):
		return replicaBehind
	default:
		return replicaElsewhere
	}
}

// exactEndpoint is sameEndpoint without its allowance for aliases (any two
// loopback addresses are one host there): a proof must not take one node's
// acknowledgement for another's. A node listed under an alias is asked
// itself instead.
func exactEndpoint(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	ia, errA := netip.ParseAddr(ha)
	ib, errB := netip.ParseAddr(hb)
	if errA != nil || errB != nil {
		return strings.EqualFold(ha, hb)
	}
	return ia.Unmap() == ib.Unmap()
}

// askReplicaInfo sends INFO replication to x through its request pool, as
// a request: a replica that hangs is found by the watchdog.
func (r *Router) askReplicaInfo(ctx context.Context, x *node) (replication, error) {
	info := redis.NewStringCmd(ctx, "info", "replication")
	start := r.clock.Now()
	x.begin(start)
	err := execStamped(ctx, x.pipe, []redis.Cmder{info})
	if err == nil {
		err = info.Err()
	}
	end := r.clock.Now()
	cl := classify(err)
	x.end(end, end.Sub(start), !cl.nodeFault() && cl != classCanceled)
	if cl.nodeFault() {
		r.nodeFailed(x, cl, err)
	}
	if err != nil {
		return replication{}, err
	}
	return parseReplication(info.Val()), nil
}

// sleep waits d on the router's clock, or until ctx ends.
func (r *Router) sleep(ctx context.Context, d time.Duration) error {
	done := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
