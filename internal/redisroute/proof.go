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
// they vanish when both copy the new primary (349 of 5,159 creates
// answered created across one in redisstore's
// TestNoCreateReportedCreatedIsLostInAForcedFailover, before this).
//
// So a WAIT that met its count is not yet a proof. Each replica of the
// shard must also be shown to hold the write, or to be unable to take over
// without it:
//
//   - INFO replication on the primary, in the write's own pipeline right
//     after the writes, gives the primary's history (master_replid) and an
//     offset at or past the write's end; INFO replication again after the
//     WAIT lists each connected replica's acknowledged offset. A replica
//     listed online at or past that offset holds the write: promoted later,
//     it takes the write with it.
//   - Any other replica is asked itself (INFO replication, through its
//     request pool, as a request the watchdog sees). One of the primary's
//     history, its link up, at or past the offset holds the write. One that
//     answers as a primary may have been promoted without it: the write is
//     unconfirmed.
//   - A replica in step (the replication check found it in step) that is
//     behind the write is waited for, asked again with growing gaps, for up
//     to AckTimeout: a lag of a few milliseconds is routine under load, and
//     a replica forced over in that moment loses what it had not applied.
//     One still behind then, or in step yet copying another history (past a
//     failover), makes the write unconfirmed. This is WAIT for every replica
//     in step, with each one named.
//   - A replica out of step (the check holds it behind: its link is down,
//     it lags, or it was not checked since it rejoined) is not waited for:
//     only an answer as a primary counts against the write. Waiting for it
//     would fail the shard's writes for as long as one replica lags, and
//     one node must not do that. A replica the check holds behind that is
//     then forced over loses what it lacked (README, Known limits); Redis's
//     own CLUSTER FAILOVER, without FORCE, waits for it to catch up.
//   - A replica that does not answer within StallAfter, or refuses the
//     connection, our credentials or the command, cannot be told; it is a
//     failed node (ejected, as a request that failed would make it) and
//     the write goes on: a write must go on when one replica of two fails
//     (redisstore's TestCreatesGoOnWhenOneOfTwoReplicasFails). A replica
//     the router ejected earlier is asked too once it answers its probes
//     again: ejection is about serving reads, and a node that recovered
//     from a stall can be forced over before it is re-admitted.
//
// What this does not cover: a replica alive to the cluster but unreachable
// from this router, forced over; a replica the router's slot map does not
// list yet; one the check holds behind, forced over.

// proofGapMax bounds the growing gap between two asks of a replica in step
// that is behind the write (from 1 ms, doubling).
const proofGapMax = 16 * time.Millisecond

// errNotHeld: a replica may have been promoted, or may be promoted,
// without the write. errProofBlind: the primary's INFO replication, which
// the proof rests on, failed (an ACL that denies INFO, for one).
var (
	errNotHeld    = errors.New("a replica may take over without the write")
	errProofBlind = errors.New("the write's replication could not be read on its primary")
)

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

// holds checks every replica of a's shard against what a wrote (see the
// comment at the top of this file). nil: the write stands.
func (r *Router) holds(ctx context.Context, a *attempt, p proof) error {
	if err := errors.Join(p.before.Err(), p.after.Err()); err != nil {
		return fmt.Errorf("%w: INFO replication on %s failed: %w", errProofBlind, a.node.addr, err)
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
		switch {
		case x == a.node:
		case listedAt(after.replicas, x.addr, before.offset):
			r.m.proofListed.Inc()
		case !x.healthy() && !r.answersProbes(x):
			r.m.proofDown.Inc() // down since it was ejected: nothing to ask
		default:
			ask = append(ask, x)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AckTimeout)
	defer cancel()
	errs := make([]error, len(ask))
	var wg sync.WaitGroup
	for i, x := range ask[1:] {
		wg.Go(func() { errs[i+1] = r.replicaHolds(ctx, x, before, a.node.addr) })
	}
	errs[0] = r.replicaHolds(ctx, ask[0], before, a.node.addr)
	wg.Wait()
	return errors.Join(errs...)
}

// markProofFailed marks a's node as markUnacked does when its proof found
// a replica that may take over without what it wrote: its reads are
// confirmed for a while, as a primary about to be replaced. Not when the
// proof could not be read at all (errProofBlind): that says nothing of
// the primary's data, and would fail its reads as well as its writes.
func (r *Router) markProofFailed(a *attempt) {
	if errors.Is(a.proofErr, errNotHeld) {
		r.markUnacked(a.node)
	}
}

// listedAt reports whether a primary's list has a replica at addr, online,
// that acknowledged offset or more.
func listedAt(list []listedReplica, addr string, offset int64) bool {
	for _, l := range list {
		if exactEndpoint(l.addr, addr) && l.state == "online" && l.offset >= offset {
			return true
		}
	}
	return false
}

// answersProbes reports an ejected node whose last probe was answered.
func (r *Router) answersProbes(x *node) bool {
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	return x.probeOK > 0
}

// replicaHolds asks x, a replica of the primary at primaryAddr whose INFO
// replication, taken right after a write, is primary, whether it holds the
// write or cannot take over without it, until ctx ends.
func (r *Router) replicaHolds(ctx context.Context, x *node, primary replication, primaryAddr string) error {
	inStep := x.healthy() && !x.behind.Load()
	gap := time.Millisecond
	for asked := 0; ; asked++ {
		own, err := r.askReplicaInfo(ctx, x)
		switch {
		case err != nil && asked > 0 && ctx.Err() != nil:
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s stayed behind the write for %s", errNotHeld, x.addr, r.cfg.AckTimeout)
		case err != nil:
			r.m.proofDown.Inc()
			return nil // it cannot be told, nor take over now: a failed node
		}
		v := replicaVerdict(own, primary, primaryAddr)
		switch {
		case v == replicaHolds:
			r.m.proofAsked.Inc()
			return nil
		case v == replicaPromoted, inStep && v == replicaElsewhere:
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s %s", errNotHeld, x.addr, v)
		case !inStep:
			r.m.proofOutOfStep.Inc()
			return nil // held behind by the check: not waited for
		}
		if err := r.sleep(ctx, gap); err != nil {
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s stayed behind the write for %s", errNotHeld, x.addr, r.cfg.AckTimeout)
		}
		gap = min(2*gap, proofGapMax)
	}
}

// A replica's answer, as replicaVerdict reads it.
const (
	replicaHolds     = "holds the write"
	replicaBehind    = "is behind the write"
	replicaPromoted  = "answers as a primary"
	replicaElsewhere = "copies another primary's history"
)

// replicaVerdict reads a replica's INFO replication against its primary's
// (at primaryAddr), taken right after a write. A replica whose link is up
// and that copies the primary's history at or past its offset holds the
// write. One that is behind it, its link down, or syncing from that
// primary afresh (after a failover, or a restart past the backlog: its
// history is still the old one until the copy is loaded), is behind.
func replicaVerdict(own, primary replication, primaryAddr string) string {
	switch {
	case own.primary:
		return replicaPromoted
	case own.replid == primary.replid && own.offset >= primary.offset && !own.linkDown:
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
// a request the watchdog sees, bounded by StallAfter: a node silent that
// long is a failed node, as the watchdog would find it (which it does not
// while no other node answers either: a lone write).
func (r *Router) askReplicaInfo(ctx context.Context, x *node) (replication, error) {
	askCtx, cancel := context.WithTimeout(ctx, r.cfg.StallAfter)
	defer cancel()
	info := redis.NewStringCmd(askCtx, "info", "replication")
	start := r.clock.Now()
	x.begin(start)
	err := execStamped(askCtx, x.pipe, []redis.Cmder{info})
	if err == nil {
		err = info.Err()
	}
	end := r.clock.Now()
	cl := classify(err)
	if cl == classCanceled && ctx.Err() == nil {
		cl = classUnanswered // its own StallAfter ran out, not the proof's time
	}
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
