package redisroute

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// errPrimaryCapped: the read would fall back to a primary that has used up
// its fallback allowance.
var errPrimaryCapped = fmt.Errorf("%w: the primary's fallback read cap is reached", ErrUnavailable)

// errPrimaryStalled: a write was not sent because its primary is not answering.
var errPrimaryStalled = fmt.Errorf("%w: the primary is not answering; the write was not sent", ErrUnavailable)

// errFreshPrimaryStalled: a read that must see the latest write was not sent
// because its primary is not answering (a replica could answer stale).
var errFreshPrimaryStalled = fmt.Errorf("%w: the primary is not answering; a read of the latest write cannot go to a replica", ErrUnavailable)

// errSilentNoBudget: every node a read went to is not answering, and the
// hedge budget has no token to send it elsewhere.
var errSilentNoBudget = fmt.Errorf("%w: no node the read went to is answering, and the hedge budget is spent", ErrUnavailable)

// errShardStalled: every node of the shard was tried or is hung.
var errShardStalled = fmt.Errorf("%w: every node of the shard failed or is not answering", ErrUnavailable)

// pickRead chooses the node of shard s that serves n read commands,
// skipping nodes in exclude. The policy decides the preference; health and
// the primary's fallback cap decide what is allowed.
func (r *Router) pickRead(s *shard, n int, exclude []*node) (*node, Via, error) {
	now := r.clock.Now()
	// A stalled node (requests waiting, nothing answered) is not preferred,
	// even when it is too important to eject; a hopeless one (silent for
	// longer) is never chosen: a request sent to it would only wait for its
	// deadline, and failing fast is the better answer.
	// Validate keeps FailFastAfter ≥ StallAfter, so a hopeless node is
	// stalled too: usable need not ask both.
	// A replica that is behind its primary (see replication.go) would
	// answer with stale data: it serves no read, not even as a last resort,
	// because a read that fails is better than one that answers with data
	// from before a write that was acknowledged. Its mark is cleared when
	// its primary stops answering, so a failover still finds it. Only a
	// replica: a node marked just before it was promoted is fresh.
	behind := func(x *node) bool { return x != s.primary && x.behind.Load() }
	open := func(x *node) bool { return !slices.Contains(exclude, x) && !r.hopeless(x, now) && !behind(x) }
	usable := func(x *node) bool {
		return x.healthy() && !slices.Contains(exclude, x) && !r.stalled(x, now) && !behind(x)
	}
	switch r.policyAt(now) {
	case Primary:
		if usable(s.primary) {
			return s.primary, ViaPreferred, nil
		}
		if x := r.pickReplica(s, usable); x != nil {
			return x, ViaFallback, nil
		}
	case Nearest:
		if x := nearest(s, usable); x != nil {
			return x, ViaPreferred, nil
		}
	default: // ReplicaPreferred
		if x := r.pickReplica(s, usable); x != nil {
			return x, ViaPreferred, nil
		}
		if usable(s.primary) {
			if s.primary.fallback != nil && !s.primary.fallback.AllowN(now, n) {
				r.m.fallbackShed.Add(float64(n))
				return nil, "", errPrimaryCapped
			}
			r.m.fallbackSent.Add(float64(n))
			return s.primary, ViaFallback, nil
		}
	}
	// Nothing healthy is left: an ejected or stalled node that is not
	// hopeless (it may have recovered before its probes say so, or just be
	// slow on a busy machine) is better than no answer.
	for _, x := range s.nodes() {
		if open(x) {
			return x, ViaFallback, nil
		}
	}
	return nil, "", errShardStalled
}

// policyAt is the read policy in force: Primary while slots migrate.
func (r *Router) policyAt(now time.Time) Policy {
	if now.UnixNano() < r.migratingUntil.Load() {
		return Primary
	}
	return r.cfg.Policy
}

// pickReplica spreads reads round-robin over the usable replicas.
func (r *Router) pickReplica(s *shard, usable func(*node) bool) *node {
	k := len(s.replicas)
	if k == 0 {
		return nil
	}
	start := int(s.rr.Add(1))
	for i := 0; i < k; i++ {
		if x := s.replicas[(start+i)%k]; usable(x) {
			return x
		}
	}
	return nil
}

// nearest picks the usable node with the lowest recent latency.
func nearest(s *shard, usable func(*node) bool) *node {
	var best *node
	for _, x := range s.nodes() {
		if usable(x) && (best == nil || x.latency() < best.latency()) {
			best = x
		}
	}
	return best
}

// pickLegacy reproduces go-redis v6 with ReadOnly: a random replica per
// command, whatever its health.
func pickLegacy(s *shard) *node {
	if len(s.replicas) == 0 {
		return s.primary
	}
	return s.replicas[rand.IntN(len(s.replicas))]
}
