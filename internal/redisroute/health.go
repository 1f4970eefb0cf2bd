package redisroute

import (
	"context"
	"sync"
	"time"
)

// Ejection reasons.
const (
	ejectRefused    = "refused"
	ejectUnanswered = "unanswered"
	ejectStalled    = "stalled"
	ejectAuth       = "auth" // the node refused our credentials or rights
	ejectBusy       = "busy" // the node answers BUSY: a script runs on it
	ejectFull       = "full" // the node refuses new connections: maxclients reached
)

// ejectReasons lists every ejection reason: each node's counters start at
// 0 for each, so that the first ejection is an increase to Prometheus.
var ejectReasons = []string{ejectRefused, ejectUnanswered, ejectStalled, ejectAuth, ejectBusy, ejectFull}

// eject stops routing to n until probes re-admit it. It refuses to eject
// the last healthy node of a shard or more than MaxEjectedFraction of all
// nodes: with nothing healthy left, trying a suspect node beats failing.
func (r *Router) eject(n *node, reason string) {
	if r.cfg.Policy == Legacy2019 || !n.healthy() {
		return
	}
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	if !n.healthy() {
		return
	}
	t := r.topo.Load()
	if t == nil {
		return
	}
	if s := t.shardOf(n); s != nil && s.healthyCount() <= 1 {
		return
	}
	ejected := 0
	for _, x := range t.nodes {
		if !x.healthy() {
			ejected++
		}
	}
	if float64(ejected+1) > r.cfg.MaxEjectedFraction*float64(len(t.nodes)) && ejected > 0 {
		return
	}
	n.ejected.Store(true)
	n.probeOK = 0
	n.ejectReason, n.ejectedAt = reason, r.clock.Now()
	r.m.ejections.WithLabelValues(n.addr, reason).Inc()
	r.m.ejected.WithLabelValues(n.addr).Set(1)
	r.log.Warn("redis node ejected", "node", n.addr, "reason", reason)
}

// watchdogLoop ejects nodes that stall: requests waiting, nothing answered.
// A hung process is found this way within StallAfter and two ticks, long
// before any socket timeout or the cluster's own failure detection.
func (r *Router) watchdogLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(watchdogTick(r.cfg))
	defer tick.Stop()
	w := watchdog{last: r.clock.Now()}
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.watch(&w, r.clock.Now())
	}
}

// watchdogTick is how often the watchdog looks: a quarter of StallAfter.
func watchdogTick(cfg Config) time.Duration { return max(cfg.StallAfter/4, time.Millisecond) }

// watchdog is what the watchdog remembers from one tick to the next.
type watchdog struct {
	last     time.Time           // the previous tick
	suspects map[*node]time.Time // found stalled at the previous tick, since then
}

// watch is one tick of the watchdog at now. A node is ejected when it is
// found stalled at ticks a tick's length apart, with none between that
// found it answering: when this process resumes after a pause shorter than
// the stall threshold, the watchdog may run before the goroutine that
// reads a node's reply, which arrived during the pause, and the node's
// silence (what it had been waiting before the pause, plus the pause) can
// pass the threshold. A tick later the reply has been read. (Not the next
// tick: a ticker delivers the tick it missed during the pause, and the
// next one may follow at once.)
func (r *Router) watch(w *watchdog, now time.Time) {
	// Only a pause as long as the stall threshold moves the floor; shorter
	// scheduling delays are covered by the second look, or on a busy
	// machine the floor would move so often that nothing ever counts as
	// stalled.
	late := now.Sub(w.last) > r.cfg.StallAfter
	w.last = now
	suspects := w.suspects
	w.suspects = nil
	if late {
		// This process was not running (GC, CPU starvation, SIGSTOP):
		// replies may be waiting unread, so silence proves nothing yet.
		r.stallFloor.Store(now.UnixNano())
		return
	}
	t := r.topo.Load()
	if !anyProgress(t, now, r.cfg.StallAfter) {
		return // nobody answers: an outage, or us; ejecting would not help
	}
	for _, n := range t.nodes {
		if !n.healthy() || !r.stalled(n, now) {
			continue
		}
		since, suspect := suspects[n]
		if !suspect {
			since = now
		} else if now.Sub(since) >= watchdogTick(r.cfg) {
			r.eject(n, ejectStalled)
			continue
		}
		if w.suspects == nil {
			w.suspects = map[*node]time.Time{}
		}
		w.suspects[n] = since
	}
}

// anyProgress reports whether some node answered within d: the router is
// reading replies, so a node that stays silent is the node's fault.
func anyProgress(t *topology, now time.Time, d time.Duration) bool {
	for _, n := range t.nodes {
		if now.UnixNano()-n.lastProgress.Load() < int64(d) {
			return true
		}
	}
	return false
}

// stalled: n has been silent long enough to be avoided, hedged around and
// ejected.
func (r *Router) stalled(n *node, now time.Time) bool {
	return n.stalled(now, r.cfg.StallAfter, r.stallFloor.Load())
}

// hopeless: n has been silent long enough that a call with nowhere else to
// go fails now rather than wait for its deadline.
func (r *Router) hopeless(n *node, now time.Time) bool {
	return n.stalled(now, r.cfg.FailFastAfter, r.stallFloor.Load())
}

// probeEjected, every ProbeInterval, re-admits ejected nodes after
// ReadmitAfter consecutive successful PINGs. Probing is off the request
// path, so a node that is still hung never costs a request its latency again.
func (r *Router) probeEjected() {
	t := r.topo.Load()
	var wg sync.WaitGroup
	for _, n := range t.nodes {
		if n.healthy() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ProbeInterval)
			err := n.probe.Ping(ctx).Err()
			cancel()
			if err != nil && isAuthRefusal(err) {
				// Counted for as long as it lasts: requests stop meeting
				// the refusal once the node is ejected, probes do not.
				r.m.nodeErrors.WithLabelValues(n.addr, kindAuth).Inc()
			}
			// A node that cannot persist refuses PING too (MISCONF), yet
			// it answers, and serves reads.
			r.probeResult(n, err == nil || IsCannotPersist(err))
		}()
	}
	wg.Wait()
}

func (r *Router) probeResult(n *node, ok bool) {
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	if !ok {
		n.probeOK = 0
		return
	}
	n.probeOK++
	if n.probeOK < r.cfg.ReadmitAfter {
		return
	}
	now := r.clock.Now()
	n.lastProgress.Store(now.UnixNano())
	r.awaitCheck(n, now)
	n.ejected.Store(false)
	r.m.ejected.WithLabelValues(n.addr).Set(0)
	r.log.Info("redis node re-admitted", "node", n.addr)
}
