package redisroute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxRedirects bounds MOVED/ASK hops per command.
const maxRedirects = 5

// cmdState is the bookkeeping of one command during a call.
type cmdState struct {
	done      bool
	pending   int     // attempts in flight that carry it
	tried     []*node // nodes it was sent to
	attempts  int
	redirects int
	backoff   time.Duration
	lastErr   error
	sent      bool // a write that may have reached a node
}

type event struct {
	done  *attempt // an attempt finished
	hedge *attempt // the hedge timer of an attempt fired
	retry []int    // a backoff elapsed for these commands
	alarm uint64   // the call's alarm of this generation rang: see wakeups
}

// wakeup is an event the call is to handle at a time: a hedge or a retry.
type wakeup struct {
	at time.Time
	ev event
}

// call coordinates one Exec: it sends sub-pipelines, hedges, retries and
// follows redirects until every command has a result or the deadline passes.
// Only the call's own goroutine touches its state; senders and timers talk
// to it through events.
type call struct {
	r      *Router
	ctx    context.Context
	cmds   []Cmd
	res    Results
	st     []cmdState
	left   int
	events chan event
	done   chan struct{}
	live   []*attempt // attempts sent whose replies were not handled yet
	// One alarm per call, set for the earliest of its wakeups, instead of
	// a timer per attempt: a call that nothing slows down (its answers
	// arrive before the first hedge is due) costs one timer, set and
	// stopped.
	wakeups  []wakeup
	alarm    stopper
	alarmAt  time.Time
	alarmGen uint64 // of the alarm set; a ring of an earlier one, replaced, is ignored
}

func (c *call) run(t *topology) {
	c.dispatch(t, c.unfinished(), ViaPreferred)
	for c.left > 0 {
		select {
		case ev := <-c.events:
			switch {
			case ev.done != nil:
				c.onDone(ev.done)
			case ev.alarm != 0:
				if ev.alarm == c.alarmGen {
					c.ring()
				}
			}
		case <-c.ctx.Done():
			c.failRemaining(c.ctx.Err())
		case <-c.r.stop:
			c.failRemaining(ErrClosed)
		}
	}
	close(c.done)
	if c.alarm != nil {
		c.alarm.Stop()
	}
}

// handle runs a wakeup's event.
func (c *call) handle(ev event) {
	switch {
	case ev.hedge != nil:
		c.onHedge(ev.hedge)
	case ev.retry != nil:
		if open := c.open(ev.retry); len(open) > 0 {
			c.dispatch(c.r.topo.Load(), open, ViaRetry)
		}
	}
}

// ring handles every wakeup that is due, earliest first, then
// sets the alarm for the next one.
func (c *call) ring() {
	c.alarm = nil
	now := c.r.clock.Now()
	var due []wakeup
	rest := c.wakeups[:0]
	for _, w := range c.wakeups {
		if w.at.After(now) {
			rest = append(rest, w)
		} else {
			due = append(due, w)
		}
	}
	c.wakeups = rest
	slices.SortStableFunc(due, func(a, b wakeup) int { return a.at.Compare(b.at) })
	for _, w := range due {
		if c.left == 0 {
			return
		}
		c.handle(w.ev)
	}
	c.setAlarm()
}

// setAlarm sets the alarm for the earliest wakeup, unless it already is.
func (c *call) setAlarm() {
	if len(c.wakeups) == 0 {
		return
	}
	now := c.r.clock.Now()
	next := c.wakeups[0].at
	for _, w := range c.wakeups[1:] {
		if w.at.Before(next) {
			next = w.at
		}
	}
	if c.alarm != nil {
		if !next.Before(c.alarmAt) {
			return
		}
		c.alarm.Stop()
	}
	c.alarmAt = next
	c.alarmGen++
	gen := c.alarmGen
	c.alarm = c.r.clock.AfterFunc(next.Sub(now), func() {
		select {
		case c.events <- event{alarm: gen}:
		case <-c.done:
		}
	})
}

func (c *call) unfinished() []int {
	var idx []int
	for i := range c.st {
		if !c.st[i].done {
			idx = append(idx, i)
		}
	}
	return idx
}

// open filters idx down to the commands still without a result.
func (c *call) open(idx []int) []int {
	var out []int
	for _, i := range idx {
		if !c.st[i].done {
			out = append(out, i)
		}
	}
	return out
}

// dispatch routes the given commands on topology t: writes to their
// primary, reads to the node the policy picks for their shard (one node per
// shard per dispatch, so a call touches as few nodes as possible).
func (c *call) dispatch(t *topology, idx []int, via Via) {
	// A call touches a few shards: a list searched in order is cheaper
	// than a map, and keeps the order of first appearance. The groups'
	// members share one array, cut once every group's size is known.
	type group struct {
		s            *shard
		write, fresh bool
		n            int
		members      []int
	}
	var groups []group
	buf := make([]int, 2*len(idx))
	of, backing := buf[:len(idx)], buf[len(idx):] // of[j]: the group of idx[j], -1 for none
	for j, i := range idx {
		s := t.slots[Slot(c.cmds[i].Key)]
		if s == nil {
			of[j] = -1
			c.r.requestRefresh(refreshNoNode)
			c.finish(i, Result{Err: ErrNoNode})
			continue
		}
		w, f := c.cmds[i].Write, c.cmds[i].Fresh
		k := 0
		for k < len(groups) && (groups[k].s != s || groups[k].write != w || groups[k].fresh != f) {
			k++
		}
		if k == len(groups) {
			groups = append(groups, group{s: s, write: w, fresh: f})
		}
		of[j] = k
		groups[k].n++
	}
	off := 0
	for k := range groups {
		groups[k].members = backing[off : off : off+groups[k].n]
		off += groups[k].n
	}
	for j, i := range idx {
		if k := of[j]; k >= 0 {
			groups[k].members = append(groups[k].members, i)
		}
	}
	for _, g := range groups {
		members := g.members
		if g.write || g.fresh {
			// Only the primary can take a write or answer a read that must
			// see the latest write: a replica's answer may be stale, so
			// neither ever goes elsewhere, however slow the primary.
			if c.r.hopeless(g.s.primary, c.r.clock.Now()) {
				// Not sent, so not ambiguous: the caller learns now, not at its
				// deadline. A failover may have replaced the primary.
				c.r.requestRefresh(refreshPrimaryStalled)
				err := errPrimaryStalled
				if !g.write {
					err = errFreshPrimaryStalled
				}
				for _, i := range members {
					c.finishErr(i, err)
				}
				continue
			}
			c.launch(&attempt{node: g.s.primary, idx: members, via: via})
			continue
		}
		exclude := c.triedByAll(members)
		n, pv, err := c.r.pickRead(g.s, len(members), exclude)
		if err != nil {
			for _, i := range members {
				c.finishErr(i, err)
			}
			continue
		}
		v := via
		if v == ViaPreferred {
			v = pv
		}
		c.launch(&attempt{node: n, idx: members, via: v, confirm: c.r.suspectFallback(g.s, n)})
	}
}

// suspectFallback is the number of replicas that must confirm a read sent
// to n: 1 when n is the primary of s and either a replica of s that
// answers has fallen behind it, or a write to it lately had fewer replica
// acknowledgements than it asked for while a replica of s is vouched for
// by the replication check — the shape of a primary cut off from its
// replicas, whose data may hold writes a failover is about to undo — else
// 0. The unacknowledged write is the first sign, at once; the lag check
// takes seconds to see the same cut. A replica that is down is neither
// behind nor vouched for (nothing answers for it): dead replicas cost no
// read, however many writes their absence leaves unacknowledged.
func (r *Router) suspectFallback(s *shard, n *node) int {
	if n != s.primary {
		return 0
	}
	now := r.clock.Now()
	unacked := now.UnixNano() < n.unackedUntil.Load()
	for _, x := range s.replicas {
		if !x.healthy() {
			continue
		}
		if x.fellBehind() || unacked && r.vouched(x, now) {
			return 1
		}
	}
	return 0
}

// redirectConfirm is suspectFallback for a node a MOVED or ASK sends reads
// to: the node a slot moves to may be a primary cut off from its replicas
// as well as any other.
func (r *Router) redirectConfirm(n *node) int {
	if s := r.topo.Load().shardOf(n); s != nil {
		return r.suspectFallback(s, n)
	}
	return 0
}

// vouched reports whether the replication check lately learned something
// of replica x, from x itself or from its primary's list: x is alive.
func (r *Router) vouched(x *node, now time.Time) bool {
	v := x.repl.Load()
	// A check round may take an interval more when a node's INFO times out.
	// A node not checked yet vouches for nothing: nothing answered for it.
	return v != nil && !v.unchecked && now.Sub(v.at) <= 3*r.cfg.ReplicaCheckInterval
}

// markUnacked records that a write to n (or a confirmed read's fence, a
// write too) had fewer replica acknowledgements than it asked for; each
// such write renews the mark.
func (r *Router) markUnacked(n *node) {
	n.unackedUntil.Store(r.clock.Now().Add(r.unackedHold()).UnixNano())
}

// unackedHold is how long markUnacked's mark lasts: until the lag check
// would have seen a cut that began then (MaxReplicaLag, plus a second of
// Redis's whole-second lag, plus two checks: a round may take an interval
// more).
func (r *Router) unackedHold() time.Duration {
	return r.cfg.MaxReplicaLag + time.Second + 2*r.cfg.ReplicaCheckInterval
}

// triedByAll returns the nodes every one of the commands was already sent to.
func (c *call) triedByAll(idx []int) []*node {
	var out []*node
	for _, n := range c.st[idx[0]].tried {
		all := true
		for _, i := range idx[1:] {
			if !containsNode(c.st[i].tried, n) {
				all = false
				break
			}
		}
		if all {
			out = append(out, n)
		}
	}
	return out
}

func containsNode(ns []*node, n *node) bool {
	for _, x := range ns {
		if x == n {
			return true
		}
	}
	return false
}

func removeAttempt(as []*attempt, a *attempt) []*attempt {
	for i, x := range as {
		if x == a {
			return append(as[:i], as[i+1:]...)
		}
	}
	return as
}

// carriesAny reports whether attempt a carries any of the commands idx.
func carriesAny(a *attempt, idx []int) bool {
	for _, i := range idx {
		if slices.Contains(a.idx, i) {
			return true
		}
	}
	return false
}

func removeNode(ns []*node, n *node) []*node {
	out := ns[:0]
	for _, x := range ns {
		if x != n {
			out = append(out, x)
		}
	}
	return out
}

func (c *call) launch(a *attempt) {
	for _, i := range a.idx {
		st := &c.st[i]
		st.pending++
		st.attempts++
		st.tried = append(st.tried, a.node)
		if c.cmds[i].Write {
			st.sent = true
		}
	}
	if a.via == ViaPreferred || a.via == ViaFallback {
		c.r.hedges.deposit(1)
		c.r.retries.deposit(1)
	}
	c.live = append(c.live, a)
	c.r.spawn(func() {
		// Detached from the call's cancellation: a request to a hung node
		// must stay outstanding (bounded by ReadTimeout) so the watchdog sees
		// the node make no progress, rather than vanish when its call is
		// answered by a hedge.
		c.r.send(context.WithoutCancel(c.ctx), a, c.cmds)
		select {
		case c.events <- event{done: a}:
		case <-c.done:
		}
	})
	switch {
	case a.via == ViaHedge:
		// Not hedged again, but looked at (see onSilent).
		c.after(c.r.cfg.FailFastAfter, event{hedge: a})
	case !c.primaryOnly(a.idx):
		if c.r.cfg.HedgeBudget > 0 {
			c.after(a.node.hedgeDelay(c.r.cfg), event{hedge: a})
		} else {
			// Not hedged at a delay, only looked at (see onSilent,
			// which may still rescue it from the budget's burst).
			a.hedged = true
			c.after(c.r.cfg.FailFastAfter, event{hedge: a})
		}
	case !anyWrite(a.idx, c.cmds):
		// A fresh read is never hedged, but it must not wait out its
		// deadline on a primary that answers nothing: look again once
		// the primary could count as hopeless.
		c.after(c.r.cfg.FailFastAfter, event{hedge: a})
	}
}

// primaryOnly reports whether any of the commands may only be served by
// its primary: a write, or a fresh read. Such an attempt is never hedged.
func (c *call) primaryOnly(idx []int) bool {
	for _, i := range idx {
		if c.cmds[i].Write || c.cmds[i].Fresh {
			return true
		}
	}
	return false
}

// after has the call handle ev once d has passed.
func (c *call) after(d time.Duration, ev event) {
	c.wakeups = append(c.wakeups, wakeup{at: c.r.clock.Now().Add(d), ev: ev})
	c.setAlarm()
}

// onHedge sends a backup of a slow read attempt to another node of the shard.
func (c *call) onHedge(a *attempt) {
	open := c.open(a.idx)
	if len(open) == 0 || a.done {
		return
	}
	if a.hedged {
		c.onSilent(a, open)
		return
	}
	if c.primaryOnly(open) {
		// Fresh reads: only their primary may answer; fail them once it
		// is hopeless, as a read with no other node left would.
		if c.r.hopeless(a.node, c.r.clock.Now()) {
			c.r.requestRefresh(refreshPrimaryStalled) // a failover may have replaced it
			c.failEach(open, errFreshPrimaryStalled)
			return
		}
		c.rearm(a, c.r.cfg.FailFastAfter)
		return
	}
	// A hedge goes to another node of the shard. When reads must come from
	// the primary (the primary policy, or slots migrating, when a replica
	// may answer "missing" for a key that moved), a replica's answer would
	// be faster but could be wrong: it is only asked once the primary is
	// not answering at all, as for any fallback.
	now := c.r.clock.Now()
	if c.r.policyAt(now) == Primary && a.node.healthy() && !c.r.stalled(a.node, now) {
		c.rearm(a, c.r.cfg.StallAfter)
		return
	}
	s := c.r.topo.Load().slots[Slot(c.cmds[open[0]].Key)]
	if s == nil {
		c.rearm(a, c.r.cfg.FailFastAfter) // no slot map for it now: look again
		return
	}
	n, _, err := c.r.pickRead(s, len(open), c.triedByAll(open))
	if err != nil || n == a.node {
		c.noHedge(a, open, err)
		return
	}
	// One hedge at most, sent or denied; from then on the attempt is only
	// looked at, in case every node its commands went to falls silent.
	a.hedged = true
	if c.r.hedges.withdraw() {
		c.hedge(s, n, open)
	} else {
		c.r.m.hedgeDenied.Add(float64(len(open)))
	}
	c.rearm(a, c.r.cfg.FailFastAfter)
}

// hedge sends open to n as a hedge, its budget token already withdrawn.
func (c *call) hedge(s *shard, n *node, open []int) {
	c.r.m.hedgeSent.Add(float64(len(open)))
	c.launch(&attempt{node: n, idx: open, via: ViaHedge, hedged: true, confirm: c.r.suspectFallback(s, n)})
}

// failEach fails each of the commands idx with err.
func (c *call) failEach(idx []int, err error) {
	for _, i := range idx {
		c.finishErr(i, err)
	}
}

// allSilent reports whether every attempt still holding some of the
// commands idx is on a hopeless node. A node whose attempt already ended
// (refused, reset) holds nothing: it is not waited for.
func (c *call) allSilent(idx []int) bool {
	now := c.r.clock.Now()
	for _, x := range c.live {
		if !c.r.hopeless(x.node, now) && carriesAny(x, idx) {
			return false
		}
	}
	return true
}

// onSilent looks again at a read attempt still unanswered that had its
// hedge, or is one. Once every node still holding some of its commands is
// hopeless, they go to a node not tried yet or, if none is left that is
// not hopeless too (the whole shard is silent) or the hedge budget is
// spent, fail now rather than at their deadline.
func (c *call) onSilent(a *attempt, open []int) {
	s := c.r.topo.Load().slots[Slot(c.cmds[open[0]].Key)]
	if !c.allSilent(open) || s == nil {
		c.rearm(a, c.r.cfg.FailFastAfter)
		return
	}
	// The token first: a rescue the budget refuses charges nothing else
	// (pickRead counts fallbacks and spends the primary's allowance).
	if !c.r.hedges.withdraw() {
		c.r.m.hedgeDenied.Add(float64(len(open)))
		c.failEach(open, errSilentNoBudget)
		return
	}
	n, _, err := c.r.pickRead(s, len(open), c.triedByAll(open))
	if err != nil {
		c.r.hedges.refund()
		c.failEach(open, err)
		return
	}
	c.hedge(s, n, open)
	c.rearm(a, c.r.cfg.FailFastAfter) // each attempt is looked at until it ends
}

// noHedge handles a slow read with nowhere to hedge: if every node still
// holding its commands is known to be silent, the whole shard is out (a
// full outage), so the reads fail now instead of at their deadline;
// otherwise look again once the nodes have had time to count as hopeless.
func (c *call) noHedge(a *attempt, open []int, err error) {
	if c.allSilent(open) {
		if err == nil {
			err = errShardStalled
		}
		c.failEach(open, err)
		return
	}
	c.rearm(a, c.r.cfg.FailFastAfter)
}

// rearm looks at a slow attempt again after d, for as long as the call
// lives: its node may count as stalled (a hedge may then go elsewhere) or
// hopeless (the attempt then fails fast) later than usual, when the router
// itself was not running for a while (see watchdogLoop's stall floor). A
// look every d costs one wakeup of the call's single alarm.
func (c *call) rearm(a *attempt, d time.Duration) {
	c.after(d, event{hedge: a})
}

// onDone turns an attempt's replies into results, redirects or retries.
func (c *call) onDone(a *attempt) {
	a.done = true
	c.live = removeAttempt(c.live, a)
	if IsOutOfMemory(a.fenceErr) {
		a.node.full.Store(true) // its fences are scripts from now on (fence.go)
	}
	var retryNow []int
	redirects := map[string][]int{}
	asks := map[string][]int{}
	for k, i := range a.idx {
		st := &c.st[i]
		st.pending--
		if st.done {
			continue
		}
		err := a.replies[k].Err()
		cl := classify(err)
		if cl != classOK {
			st.lastErr = fmt.Errorf("%s: %w", a.node.addr, err)
		}
		write := c.cmds[i].Write
		// A fresh read has one possible node, like a write: it waits for
		// the primary to come back (or be replaced) instead of retrying at
		// once on a node it may not use.
		primaryOnly := write || c.cmds[i].Fresh
		need := max(c.cmds[i].Acks, a.confirm)
		if write {
			need = c.cmds[i].Acks
		}
		if cl == classOK && !write && need > 0 && a.fenceErr != nil {
			// The fence of a confirmed read was redirected or not served:
			// the node answered a read of a slot it no longer serves (a
			// demoted primary, a migrated slot), so the read goes where
			// the fence was sent.
			switch fc := classify(a.fenceErr); fc {
			case classMoved, classAsk, classTryAgain, classClusterDn, classNotServed:
				cl, err = fc, a.fenceErr
				st.lastErr = fmt.Errorf("%s: fence: %w", a.node.addr, err)
			}
		}
		switch cl {
		case classOK:
			res := Result{Val: value(a.replies[k]), Node: a.node.addr, Via: a.via}
			switch {
			case write && int(a.acked) < need:
				res.Err = fmt.Errorf("%w: %d of %d replicas acknowledged within %s", ErrUnconfirmed, a.acked, need, c.r.cfg.AckTimeout)
				c.r.markUnacked(a.node)
			case write && need > 0 && a.proofErr != nil:
				res.Err = fmt.Errorf("%w: %d replicas acknowledged, but %w", ErrUnconfirmed, a.acked, a.proofErr)
				c.r.markProofFailed(a)
			case !write && need > 0 && a.fenceErr != nil:
				res.Val, res.Err = nil, fmt.Errorf("%w: the fence write failed: %v", ErrReadUnconfirmed, a.fenceErr)
			case !write && int(a.acked) < need:
				res.Val, res.Err = nil, fmt.Errorf("%w: %d of %d replicas acknowledged within %s", ErrReadUnconfirmed, a.acked, need, c.r.cfg.AckTimeout)
				c.r.markUnacked(a.node) // the fence is a write its replicas did not take
			case !write && need > 0 && a.proofErr != nil:
				res.Val, res.Err = nil, fmt.Errorf("%w: %d replicas acknowledged the fence, but %w", ErrReadUnconfirmed, a.acked, a.proofErr)
				c.r.markProofFailed(a)
			}
			if res.Err != nil && !write && c.cmds[i].Acks == 0 && st.pending > 0 {
				// The router's own confirmation (suspectFallback) failed,
				// not one the caller asked for: this node's answer is not
				// to be used, but another attempt may still answer.
				// %v: should the call run out of time waiting, it ends
				// unanswered, not unconfirmed.
				st.lastErr = fmt.Errorf("%s: %v", a.node.addr, res.Err)
				continue
			}
			c.finish(i, res)
		case classReply:
			if IsOutOfMemory(err) {
				a.node.full.Store(true) // its fences are scripts from now on (fence.go)
			}
			c.finish(i, Result{Err: st.lastErr, Node: a.node.addr, Via: a.via})
		case classMoved, classAsk:
			addr, _ := redis.IsMovedError(err)
			if cl == classAsk {
				addr, _ = redis.IsAskError(err)
				c.r.m.redirAsk.Inc()
				c.r.migrating.seen(Slot(c.cmds[i].Key), c.r.clock.Now())
			} else {
				c.r.m.redirMoved.Inc()
				c.r.requestRefresh(refreshMoved)
			}
			c.r.migratingUntil.Store(c.r.clock.Now().Add(c.r.cfg.MigrationGrace).UnixNano())
			st.sent = false // a redirect reply means it did not run here
			st.tried = removeNode(st.tried, a.node)
			if st.redirects++; st.redirects > maxRedirects || !validAddr(addr) {
				c.giveUp(i)
			} else if cl == classAsk {
				asks[addr] = append(asks[addr], i)
			} else {
				redirects[addr] = append(redirects[addr], i)
			}
		case classTryAgain, classClusterDn, classNotServed:
			// Not executed: safe for reads and writes alike. Let the topology
			// catch up, then route again. Only LOADING/READONLY say something
			// about this node; the others are cluster-wide states, so the node
			// stays a candidate.
			st.sent = false
			if cl == classTryAgain {
				c.r.m.tryAgain.Inc()
				c.r.migrating.seen(Slot(c.cmds[i].Key), c.r.clock.Now())
			}
			if cl != classNotServed {
				st.tried = removeNode(st.tried, a.node)
			}
			if cl != classTryAgain {
				c.r.requestRefresh(refreshNotServed)
			}
			if cl == classNotServed && !primaryOnly {
				retryNow = append(retryNow, i)
			} else {
				c.backoff(i)
			}
		case classUnsent, classRefused:
			switch {
			case primaryOnly:
				st.sent = false
				c.backoff(i)
			case st.pending == 0:
				retryNow = append(retryNow, i)
			}
		case classUnanswered, classCanceled:
			switch {
			case st.pending > 0: // another attempt may still answer
			case write:
				c.finishErr(i, fmt.Errorf("%w: %w", ErrAmbiguous, st.lastErr))
			case cl == classCanceled:
				c.finishErr(i, st.lastErr)
			case primaryOnly:
				c.backoff(i)
			default:
				retryNow = append(retryNow, i)
			}
		}
	}
	c.retry(retryNow)
	for addr, idx := range redirects {
		n := c.r.nodeFor(addr)
		n.namedOwner(c.r.clock.Now())
		c.launch(&attempt{node: n, idx: idx, via: ViaRedirect, confirm: c.r.redirectConfirm(n)})
	}
	for addr, idx := range asks {
		n := c.r.nodeFor(addr)
		n.namedOwner(c.r.clock.Now())
		c.launch(&attempt{node: n, idx: idx, via: ViaRedirect, asking: true, confirm: c.r.redirectConfirm(n)})
	}
}

// retry re-sends unanswered reads to another node, within the retry budget.
func (c *call) retry(idx []int) {
	if len(idx) == 0 {
		return
	}
	if !c.r.retries.withdraw() {
		c.r.m.retryDenied.Inc()
		for _, i := range idx {
			c.giveUp(i)
		}
		return
	}
	c.r.m.retrySent.Inc()
	c.dispatch(c.r.topo.Load(), idx, ViaRetry)
}

// backoff schedules command i to be routed again after a growing pause:
// the cluster is failing over, migrating a slot, or loading.
func (c *call) backoff(i int) {
	st := &c.st[i]
	st.backoff = min(max(2*st.backoff, 10*time.Millisecond), 250*time.Millisecond)
	if dl, ok := c.ctx.Deadline(); ok && dl.Sub(c.r.clock.Now()) < st.backoff {
		c.giveUp(i)
		return
	}
	c.after(st.backoff, event{retry: []int{i}})
}

func (c *call) finish(i int, res Result) {
	st := &c.st[i]
	if st.done {
		return
	}
	st.done = true
	c.left--
	res.Attempts = st.attempts
	c.res[i] = res
	switch {
	case res.Err == nil:
		c.r.m.cmdOK.Inc()
		if res.Via == ViaHedge {
			c.r.m.hedgeWon.Inc()
		}
	case errors.Is(res.Err, ErrAmbiguous):
		c.r.m.cmdAmbiguous.Inc()
	case errors.Is(res.Err, ErrUnconfirmed), errors.Is(res.Err, ErrReadUnconfirmed):
		c.r.m.cmdUnconfirmed.Inc()
	default:
		c.r.m.cmdError.Inc()
	}
}

// giveUp ends command i unexecuted, last refused with its lastErr: the
// cluster's state (down, loading, migrating, a node refusing this client)
// or no node reachable, never a reply to the command itself, so
// ErrUnavailable, with lastErr saying which.
func (c *call) giveUp(i int) {
	err := c.st[i].lastErr
	if err != nil && !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	c.finishErr(i, err) // nil: ErrUnavailable
}

func (c *call) finishErr(i int, err error) {
	if err == nil {
		err = ErrUnavailable
	}
	c.finish(i, Result{Err: err})
}

// failRemaining ends the call at its deadline. A write that may have been
// sent is ambiguous, not failed.
func (c *call) failRemaining(err error) {
	for i := range c.st {
		st := &c.st[i]
		if st.done {
			continue
		}
		e := err
		if st.lastErr != nil {
			e = fmt.Errorf("%w (last error: %w)", err, st.lastErr)
		}
		if c.cmds[i].Write && st.sent {
			e = fmt.Errorf("%w: %w", ErrAmbiguous, e)
		}
		c.finishErr(i, e)
	}
}

// value converts a reply to the Result value: a missing key is nil.
func value(c redis.Cmder) any {
	if cmd, ok := c.(*redis.Cmd); ok {
		return cmd.Val()
	}
	return nil
}
