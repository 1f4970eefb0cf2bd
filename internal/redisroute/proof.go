package redisroute

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
//   - Any other replica is asked itself (INFO replication, through a pool
//     of its own, without the request pool's hold on a replica held out of
//     reads, as a request the watchdog sees). One of the primary's
//     history, its link up, at or past the offset holds the write. One that
//     answers as a primary may have been promoted without it: the write is
//     unconfirmed.
//   - A replica in step (the replication check finds it in step; ejection,
//     which is about serving reads, does not change that) that is behind
//     the write, or copies another history (switching to a new primary), is
//     waited for, asked again with growing gaps, for up to AckTimeout: a
//     lag of a few milliseconds is routine under load, and a replica forced
//     over in that moment loses what it had not applied. Still so then, the
//     write is unconfirmed, and the replica is not waited for until the lag
//     check would have seen it (holdLaggard): one slower than AckTimeout yet
//     acknowledging each second, which the check (in whole seconds) does not
//     hold behind, fails one write in that time, not every one. The same
//     for a replica in step that answers with an error (credentials,
//     NOPERM, BUSY) or for which no connection was free in time. Only the
//     proof that holds the replica fails its write: one that finds it held
//     by another proof meanwhile goes on as a write begun after the hold,
//     so that the writes in flight at that moment fail at most one between
//     them, not one each.
//   - A replica whose own link is down, and that its primary did not list
//     right after the WAIT, was not receiving the write: it is not waited
//     for (the check holds it behind at its next round). One its primary
//     did list may just have lost a primary that crashed after answering,
//     and is waited for.
//   - A replica out of step (the check holds it behind: its link is down,
//     it lags, or it was not checked since it rejoined) is not waited for:
//     only an answer as a primary counts against the write. Waiting for it
//     would fail the shard's writes for as long as one replica lags, and
//     one node must not do that. A replica the check holds behind that is
//     then forced over loses what it lacked (README, Known limits); Redis's
//     own CLUSTER FAILOVER, without FORCE, waits for it to catch up.
//   - A replica silent on the wire for StallAfter, or to which no
//     connection can be made, is a failed node (ejected, as a request that
//     failed would make it), which cannot take over now, and the write goes
//     on: a write must go on when one replica of two fails (redisstore's
//     TestCreatesGoOnWhenOneOfTwoReplicasFails). A replica the router
//     ejected earlier is asked too once it answers its probes again: a node
//     that recovered from a stall can be forced over before it is
//     re-admitted.
//
// What this does not cover: a replica alive to the cluster but silent to
// this router (or ejected, its probes failing), forced over; one the
// router's slot map does not list yet; one held behind (by the check, or
// by holdLaggard), or whose link was down and unlisted, forced over.

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
func (r *Router) holds(a *attempt, p proof) error {
	if err := errors.Join(p.before.Err(), p.after.Err()); err != nil {
		// %v: a reply error of the primary's (NOPERM) is not the write's own
		// reply error, which callers tell apart with errors.As.
		return fmt.Errorf("%w: INFO replication on %s failed: %v", errProofBlind, a.node.addr, err)
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
	list := after.replicas
	var ask []*node
	for _, x := range s.nodes() {
		switch {
		case x == a.node:
		case listedAt(list, x.addr, before.offset):
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
	until := r.clock.Now().Add(r.cfg.AckTimeout)
	errs := make([]error, len(ask))
	var wg sync.WaitGroup
	for i, x := range ask[1:] {
		wg.Go(func() { errs[i+1] = r.replicaHolds(x, before, a.node.addr, listedMaybe(list, x.addr, s), until) })
	}
	errs[0] = r.replicaHolds(ask[0], before, a.node.addr, listedMaybe(list, ask[0].addr, s), until)
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
// that acknowledged offset or more. An address listed twice (replicas
// behind one NAT address, a proxy) proves nothing: one replica's
// acknowledgement could be taken for another's, so each is asked.
func listedAt(list []listedReplica, addr string, offset int64) bool {
	var at []listedReplica
	for _, l := range list {
		if exactEndpoint(l.addr, addr) {
			at = append(at, l)
		}
	}
	return len(at) == 1 && at[0].state == "online" && at[0].offset >= offset
}

// listedMaybe reports whether a primary's list may have an entry for the
// replica at addr: one at addr, or one at an address no node of shard s
// has (NAT, hostnames, replica-announce-ip), which may be it.
func listedMaybe(list []listedReplica, addr string, s *shard) bool {
	nodes := s.nodes()
	for _, l := range list {
		if exactEndpoint(l.addr, addr) || !slices.ContainsFunc(nodes, func(n *node) bool { return exactEndpoint(l.addr, n.addr) }) {
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
// write or cannot take over without it; a replica in step that is behind
// is asked again until it holds the write or until is near.
//
// A replica counts as in step unless the replication check holds it behind
// (ejection is about serving reads, and a replica ejected while in step is
// still in step), and unless it lately stayed behind a write for the whole
// ack timeout: then, until the lag check would have seen it (unackedHold),
// it is not waited for, so that a replica slower than the ack timeout but
// acknowledging each second, which the check's lag by seconds does not
// hold behind, fails one write, not every write of its shard.
func (r *Router) replicaHolds(x *node, primary replication, primaryAddr string, listed bool, until time.Time) error {
	gap := time.Millisecond
	for {
		// Read at each ask: once another write's proof holds x as a
		// laggard, this one stops waiting for it too.
		inStep := !x.behind.Load() && r.clock.Now().UnixNano() >= x.lagsWritesUntil.Load()
		own, cl, err := r.askReplicaInfo(x)
		if err != nil {
			if cl == classUnanswered || cl == classUnsent || isFull(err) || !inStep {
				// Silent for StallAfter, or no connection at all (none
				// made, or none taken: a node at its maxclients): a failed
				// node (ejected), which cannot take over now. Out of step,
				// only an answer as a primary would have counted.
				r.m.proofDown.Inc()
				return nil
			}
			// It answered, but not what the proof needs (credentials,
			// NOPERM, BUSY), or no connection was free in time: this write
			// is unconfirmed, and the replica is not waited for a while,
			// lest it fail every write of its shard. A proof whose answer
			// came once another's had held it reads it as a write begun
			// after the hold does (a refusal from a replica not waited
			// for: down): of the writes in flight when a replica went
			// busy, at most one fails, not each.
			if !r.holdLaggard(x, err.Error()) {
				r.m.proofDown.Inc()
				return nil
			}
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s could not be asked: %v", errNotHeld, x.addr, err) // %v: as above
		}
		v := replicaVerdict(own, primary, primaryAddr)
		switch {
		case v == replicaHolds:
			r.m.proofAsked.Inc()
			return nil
		case v == replicaPromoted:
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s %s", errNotHeld, x.addr, v)
		case !inStep, v == replicaLinkDown && !listed:
			// Out of step; or its own link is down and its primary, right
			// after the WAIT, did not list it: it was not receiving the
			// write, and the check holds it behind at its next round. (One
			// the primary listed may just have lost a primary that
			// crashed after answering: it is waited for, as it may be the
			// one promoted.)
			r.m.proofOutOfStep.Inc()
			return nil
		}
		// In step and behind, or copying another history (switching to a
		// new primary after a failover): asked again, while there is time
		// for an ask after the gap.
		if r.clock.Now().Add(gap + r.cfg.StallAfter).After(until) {
			if !r.holdLaggard(x, "stayed behind a write for the ack timeout") {
				r.m.proofOutOfStep.Inc() // held by another write's proof meanwhile
				return nil
			}
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s %s for %s", errNotHeld, x.addr, v, r.cfg.AckTimeout)
		}
		if err := r.sleep(gap); err != nil {
			r.m.proofUnconfirmed.Inc()
			return fmt.Errorf("%w: replica %s %s: %w", errNotHeld, x.addr, v, err)
		}
		gap = min(2*gap, proofGapMax)
	}
}

// holdLaggard stops write proofs from waiting for x until the lag check
// would have seen what made a write fail on it, and says so in the log.
// It reports whether x was not held already: only then does the caller's
// write fail for it.
func (r *Router) holdLaggard(x *node, why string) bool {
	now := r.clock.Now()
	until := now.Add(r.unackedHold()).UnixNano()
	for {
		held := x.lagsWritesUntil.Load()
		if held > now.UnixNano() {
			return false
		}
		if x.lagsWritesUntil.CompareAndSwap(held, until) {
			r.log.Warn("write proofs stop waiting for a replica", "node", x.addr, "reason", why, "until", time.Unix(0, until))
			return true
		}
	}
}

// A replica's answer, as replicaVerdict reads it.
const (
	replicaHolds     = "holds the write"
	replicaBehind    = "is behind the write"
	replicaPromoted  = "answers as a primary"
	replicaLinkDown  = "has its replication link down"
	replicaElsewhere = "copies another primary's history"
)

// replicaVerdict reads a replica's INFO replication against its primary's
// (at primaryAddr), taken right after a write. A replica whose link is up
// and that copies the primary's history at or past its offset holds the
// write, and so does one promoted from that history at or past it (its
// previous history, master_replid2, up to second_repl_offset: a
// coordinated failover, where the replica caught up first). One whose
// link is down says so. One behind it, or syncing from that primary afresh
// (a restart past the backlog: its history is still the old one until the
// copy is loaded), is behind.
func replicaVerdict(own, primary replication, primaryAddr string) string {
	switch {
	case own.primary && own.replid2 == primary.replid && own.offset2 > primary.offset:
		// second_repl_offset is one past the last byte of the old history.
		return replicaHolds
	case own.primary:
		return replicaPromoted
	case own.replid == primary.replid && own.offset >= primary.offset && !own.linkDown:
		return replicaHolds
	case own.linkDown:
		return replicaLinkDown
	case own.replid == primary.replid, exactEndpoint(own.master, primaryAddr):
		return replicaBehind
	default:
		return replicaElsewhere
	}
}

// askReplicaInfo sends INFO replication to x through its proof pool, as a
// request the watchdog sees, and says how it failed if it did (its class).
// It is bounded by StallAfter of its own, never by the proof's time: a
// socket timeout is the node's silence, and ejects it, as the watchdog
// would (which it does not while no other node answers either: a lone
// write).
func (r *Router) askReplicaInfo(x *node) (replication, class, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.StallAfter)
	defer cancel()
	info := redis.NewStringCmd(ctx, "info", "replication")
	start := r.clock.Now()
	x.begin(start)
	err := execStamped(ctx, x.askPipe, []redis.Cmder{info})
	if err == nil {
		err = info.Err()
	}
	end := r.clock.Now()
	// go-redis sets the socket's deadline from ctx: silence on the wire is
	// a net timeout (classUnanswered), the node's, and so is the context's
	// own deadline, since a dial and a wait for a connection each end
	// earlier (newNode). No free connection in that time (ErrPoolTimeout)
	// is not the node's fault.
	cl := classify(err)
	switch {
	case errors.Is(err, redis.ErrPoolTimeout):
		cl = classCanceled
		err = fmt.Errorf("no free connection: %w", err)
	case cl == classCanceled:
		cl = classUnanswered
	}
	x.end(end, end.Sub(start), !cl.nodeFault() && cl != classCanceled)
	if cl.nodeFault() {
		r.nodeFailed(x, cl, err)
	}
	if err != nil {
		return replication{}, cl, err
	}
	return parseReplication(info.Val()), classOK, nil
}

// sleep waits d on the router's clock, or until the router closes.
func (r *Router) sleep(d time.Duration) error {
	done := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-r.stop:
		return errors.New("the router is closing")
	}
}
