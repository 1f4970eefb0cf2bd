package redisroute

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// CLUSTER SLOTS lists a replica only when it is not flagged failed and the
// answering node has heard a replication offset for it
// (isReplicaAvailable in Redis's cluster_legacy.c). Right after a failover
// the replica that went on to the new primary is missing from some nodes'
// answers for a moment, and a router that took such a view would send the
// shard's whole read load to the new primary until its next periodic
// refresh, shedding what the primary's fallback cap does not admit. So a
// refresh that finds a shard without a node the previous topology had for
// its slots asks the shard's primary, and keeps each such node the primary
// lists as an online replica in step: connected and acknowledging, which
// is more than CLUSTER SLOTS knew.
//
// Bounds, so that the router never outvotes the cluster for long:
//   - a node is kept only within keptFor of the last CLUSTER SLOTS answer
//     that listed it: a replica the cluster flags failed (its bus cut off
//     while its replication link works) leaves after that, even though its
//     primary still lists it;
//   - a kept node is not asked for CLUSTER SLOTS (refreshCandidates);
//   - only nodes the cluster announced before are kept, under the address
//     it announced: an address from INFO may be one clients cannot reach
//     (behind NAT, or a hostname announced where INFO gives an IP, nothing
//     matches and nothing is kept);
//   - a primary the router holds for dead is not asked.

// keptFor is how long after CLUSTER SLOTS last listed a node it may be
// kept: past the next periodic refresh, which asks the cluster again.
func (r *Router) keptFor() time.Duration { return 2 * r.cfg.RefreshInterval }

// omittedNodes lists, for each shard of now, the nodes of old's shards
// serving any of its slots that now has nowhere. When now has every node
// of old, as on nearly every refresh, it returns nil without walking the
// slots.
func omittedNodes(old, now *topology) map[*shard][]*node {
	in := map[*node]bool{}
	for _, n := range now.nodes {
		in[n] = true
	}
	if !slices.ContainsFunc(old.nodes, func(n *node) bool { return !in[n] }) {
		return nil
	}
	out := map[*shard][]*node{}
	seen := map[[2]*shard]bool{}
	for i := range now.slots {
		s, o := now.slots[i], old.slots[i]
		if s == nil || o == nil || seen[[2]*shard{s, o}] {
			continue
		}
		seen[[2]*shard{s, o}] = true
		for _, n := range o.nodes() {
			if !in[n] && !slices.Contains(out[s], n) {
				out[s] = append(out[s], n)
			}
		}
	}
	return out
}

// keepOmitted adds to now's shards the omitted nodes their primary lists
// as online replicas in step. now is not yet published, so it may change.
// The primaries are asked at once, each bounded, so that one that hangs
// delays the refresh by that bound, not by one per shard.
func (r *Router) keepOmitted(ctx context.Context, old, now *topology) {
	omitted := omittedNodes(old, now)
	for s, ns := range omitted {
		ns = slices.DeleteFunc(ns, func(n *node) bool { return now.at.Sub(time.Unix(0, n.listedAt.Load())) > r.keptFor() })
		if len(ns) == 0 || !s.primary.healthy() || r.hopeless(s.primary, now.at) {
			delete(omitted, s)
			continue
		}
		omitted[s] = ns
	}
	infos := r.primariesReplication(ctx, slices.Collect(maps.Keys(omitted)))
	for s, ns := range omitted {
		rep, ok := infos[s]
		if !ok || !rep.primary {
			continue
		}
		for _, n := range ns {
			if now.kept[n] || !inStep(rep, n.addr, r.cfg.MaxReplicaLag) {
				continue
			}
			s.replicas = append(s.replicas, n)
			now.nodes = append(now.nodes, n)
			if now.kept == nil {
				now.kept = map[*node]bool{}
			}
			now.kept[n] = true
			r.m.kept.Inc()
			r.log.Info("redis replica kept: CLUSTER SLOTS leaves it out, its primary lists it in step",
				"node", n.addr, "primary", s.primary.addr)
		}
	}
}

// primariesReplication asks the shards' primaries for INFO replication, at
// once, each bounded; a shard whose primary did not answer is missing.
func (r *Router) primariesReplication(ctx context.Context, shards []*shard) map[*shard]replication {
	var mu sync.Mutex
	infos := map[*shard]replication{}
	var wg sync.WaitGroup
	for _, s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			text, err := s.primary.probe.Info(cctx, "replication").Result()
			cancel()
			if err != nil {
				r.log.Debug("redis primary did not say which replicas it has", "node", s.primary.addr, "err", err)
				return
			}
			mu.Lock()
			infos[s] = parseReplication(text)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return infos
}

// inStep reports whether primary lists addr as a replica online and in step.
func inStep(primary replication, addr string, maxLag time.Duration) bool {
	for _, l := range primary.replicas {
		if sameEndpoint(l.addr, addr) {
			return !judgeListed(l, maxLag).behind
		}
	}
	return false
}
