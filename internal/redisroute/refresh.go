package redisroute

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Refresh reasons, used as metric labels.
const (
	refreshInitial   = "initial"
	refreshPeriodic  = "periodic"
	refreshMoved     = "moved"
	refreshConnError = "conn_error"
	refreshNotServed = "not_served" // READONLY, LOADING
	refreshClusterDn = "clusterdown"
	refreshNoNode    = "no_node"
	// A call failed fast on a primary that answers nothing: a failover
	// may have replaced it.
	refreshPrimaryStalled = "primary_stalled"
	// Another instance reaches primaries this one does not (fleet.Reach):
	// it may know of a failover this one has not seen.
	refreshReach = "reach"
)

// requestRefresh asks the refresher for a new topology. It never blocks:
// while one request is pending, others are folded into it.
func (r *Router) requestRefresh(reason string) {
	if r.cfg.Policy == Legacy2019 {
		return // the 2019 client only refreshed on its timer
	}
	select {
	case r.refreshCh <- reason:
	default:
		r.m.refreshDeduped.Inc()
	}
}

// refreshLoop owns topology refreshes: periodic, and on request, at most
// once per RefreshMinInterval.
func (r *Router) refreshLoop() {
	defer r.wg.Done()
	interval := r.cfg.RefreshInterval
	if r.cfg.Policy == Legacy2019 {
		interval = 60 * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := time.Now()
	for {
		reason := refreshPeriodic
		select {
		case <-r.stop:
			return
		case <-tick.C:
		case reason = <-r.refreshCh:
			if wait := r.cfg.RefreshMinInterval - time.Since(last); wait > 0 {
				select {
				case <-r.stop:
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := r.refresh(ctx, reason)
		cancel()
		if err != nil {
			r.log.Warn("redis topology refresh failed", "reason", reason, "err", err)
		}
	}
}

// refresh fetches CLUSTER SLOTS from healthy known nodes (then seeds) until
// one answers with a whole slot map, keeps the replicas it leaves out that
// are in step (omitted.go), and installs the new topology.
//
// A node's answer may leave out slots its cluster serves: mid-failover, one
// answered without the promoted replica's (likely holding them as that
// node's before it had marked it a primary; CLUSTER SLOTS lists primaries
// only). Such a map sent every command of those slots to ErrNoNode until
// the next refresh, 200 ms later (TestPrimaryCrashFailsOver, once in about
// 75 runs: 6,108 reads). So an answer that covers fewer slots than the map in
// use is passed over for the next node's; when no node gives a whole one
// (slots were removed), the fullest is taken.
func (r *Router) refresh(ctx context.Context, reason string) error {
	var errs []error
	var best *topology
	var bestFrom *node
	bestCovered, inUse := 0, 0 // inUse: the map in use's slots; none before the first
	if old := r.topo.Load(); old != nil {
		inUse = old.covered()
	}
	for _, n := range r.refreshCandidates() {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		slots, err := n.probe.ClusterSlots(cctx).Result()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.addr, err))
			continue
		}
		t, err := buildTopology(slots, r.nodeFor)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.addr, err))
			continue
		}
		covered := t.covered()
		if best == nil || covered > bestCovered {
			best, bestFrom, bestCovered = t, n, covered
		}
		if covered < inUse {
			continue
		}
		r.install(ctx, t, n, reason)
		return nil
	}
	if best != nil {
		r.install(ctx, best, bestFrom, reason)
		return nil
	}
	r.m.refreshes.WithLabelValues(reason, "error").Inc()
	err := fmt.Errorf("no node answered CLUSTER SLOTS: %w", errors.Join(errs...))
	r.lastRefresh.Store(&Refreshed{At: r.clock.Now(), Reason: reason, Error: err.Error()})
	return err
}

// install makes t, answered by from, the topology in use.
func (r *Router) install(ctx context.Context, t *topology, from *node, reason string) {
	t.at = r.clock.Now()
	for _, n := range t.nodes {
		n.listedAt.Store(t.at.UnixNano())
	}
	if old := r.topo.Load(); old != nil {
		if r.cfg.Policy != Legacy2019 {
			r.keepOmitted(ctx, old, t)
		}
		r.awaitJoined(old, t)
	}
	if old := r.topo.Swap(t); old != nil {
		r.m.followTopology(old, t)
		r.noteDeparted(old, t)
	}
	r.lastRefresh.Store(&Refreshed{At: t.at, Reason: reason, OK: true})
	r.m.refreshes.WithLabelValues(reason, "ok").Inc()
	r.log.Debug("redis topology refreshed", "reason", reason, "from", from.addr, "shards", t.String())
}

// awaitJoined holds the nodes of t that old did not have out of reads
// until a check judges them (awaitCheck): a node that left the slot map
// and came back may have restarted, even if no request found it down.
func (r *Router) awaitJoined(old, t *topology) {
	was := old.byAddr()
	now := r.clock.Now()
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	for _, n := range t.nodes {
		if was[n.addr] == nil {
			r.awaitCheck(n, now)
		}
	}
}

// refreshCandidates lists healthy topology nodes first, then the rest, then
// seeds. A node kept though CLUSTER SLOTS left it out is not asked: the
// cluster may have flagged it failed, cut off from gossip, with a slot
// map that no longer holds.
func (r *Router) refreshCandidates() []*node {
	var healthy, rest []*node
	if t := r.topo.Load(); t != nil {
		for _, n := range t.nodes {
			switch {
			case t.kept[n]:
			case n.healthy():
				healthy = append(healthy, n)
			default:
				rest = append(rest, n)
			}
		}
	}
	for _, a := range r.cfg.Addrs {
		rest = append(rest, r.nodeFor(a))
	}
	// Rotate so that successive refreshes ask different nodes.
	if len(healthy) > 1 {
		k := int(r.refreshSeq.Add(1)) % len(healthy)
		healthy = append(healthy[k:], healthy[:k]...)
	}
	return append(healthy, rest...)
}

// nodeFor returns the node for addr, creating it on first sight.
func (r *Router) nodeFor(addr string) *node {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	if n, ok := r.nodes[addr]; ok {
		return n
	}
	var connected func(*node, string) error
	if r.cfg.Policy != Legacy2019 { // as in 2019: no check would release it
		connected = r.connected
	}
	n := newNode(addr, r.cfg, r.m, r.credentials, connected)
	r.awaitCheck(n, r.clock.Now())
	r.nodes[addr] = n
	return n
}
