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
)

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
	r.m.ejections.WithLabelValues(n.addr, reason).Inc()
	r.m.ejected.WithLabelValues(n.addr).Set(1)
	r.log.Warn("redis node ejected", "node", n.addr, "reason", reason)
}

// watchdogLoop ejects nodes that stall: requests waiting, nothing answered.
// A hung process is found this way within StallAfter, long before any
// socket timeout or the cluster's own failure detection.
func (r *Router) watchdogLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(max(r.cfg.StallAfter/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			t := r.topo.Load()
			for _, n := range t.nodes {
				if n.healthy() && n.stalled(now, r.cfg.StallAfter) {
					r.eject(n, ejectStalled)
				}
			}
		}
	}
}

// probeLoop re-admits ejected nodes after ReadmitAfter consecutive
// successful PINGs. Probing is off the request path, so a node that is still
// hung never costs a request its latency again.
func (r *Router) probeLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(r.cfg.ProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
			r.probeEjected()
		}
	}
}

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
			r.probeResult(n, err == nil)
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
	n.lastProgress.Store(time.Now().UnixNano())
	n.ejected.Store(false)
	r.m.ejected.WithLabelValues(n.addr).Set(0)
	r.log.Info("redis node re-admitted", "node", n.addr)
}
