package redisroute

import (
	"context"
	"slices"
	"time"
)

// CLUSTER SLOTS lists a replica only once the cluster has gossiped a
// replication offset for it (isReplicaAvailable in Redis's
// cluster_legacy.c). Right after a failover the replica that went on to
// the new primary is missing from some nodes' answers for a moment, and a
// router that took such a view would send the shard's whole read load to
// the new primary until its next periodic refresh, shedding what the
// primary's fallback cap does not admit. So a refresh that finds a shard
// without a node the previous topology had for its slots asks the shard's
// primary, and keeps each such node the primary lists as an online replica
// in step: connected and acknowledging, which is more than CLUSTER SLOTS
// knew. Only nodes the cluster announced before are kept: an address from
// INFO may be one clients cannot reach.

// omittedNodes lists, for each shard of now, the nodes of old's shards
// serving any of its slots that now has nowhere.
func omittedNodes(old, now *topology) map[*shard][]*node {
	in := map[*node]bool{}
	for _, n := range now.nodes {
		in[n] = true
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
func (r *Router) keepOmitted(ctx context.Context, old, now *topology) {
	for s, omitted := range omittedNodes(old, now) {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		text, err := s.primary.probe.Info(cctx, "replication").Result()
		cancel()
		if err != nil {
			r.log.Debug("redis primary did not say which replicas it has", "node", s.primary.addr, "err", err)
			continue
		}
		rep := parseReplication(text)
		if !rep.primary {
			continue
		}
		for _, n := range omitted {
			if inStep(rep, n.addr, r.cfg.MaxReplicaLag) {
				s.replicas = append(s.replicas, n)
				now.nodes = append(now.nodes, n)
				r.log.Info("redis replica kept: CLUSTER SLOTS leaves it out, its primary lists it in step",
					"node", n.addr, "primary", s.primary.addr)
			}
		}
	}
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
