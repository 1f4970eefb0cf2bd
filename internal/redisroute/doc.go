// Package redisroute is Apollo's resilient access to a Redis Cluster: it
// owns the slot table, decides which node serves each command, and keeps
// every pipeline answering when one node crashes or hangs.
//
// It exists because of the 2019 incident (see DESIGN.md §3): a client that
// learns about node health only from the cluster's own topology keeps
// sending reads to a dead replica for as long as the cluster lists it, and
// a wrapper that fails a whole pipeline when one command fails turns one
// dead node into a near-total outage. Here, instead:
//
//   - every command of a pipeline gets its own result, node and route;
//   - node health comes from our own traffic (errors, no progress) and a bad
//     node is ejected at once, then re-admitted by background probes;
//   - idempotent reads are hedged to another node of the shard after a delay
//     derived from the node's recent latency, and retried when unanswered,
//     within budgets; writes are never replayed once they may have run;
//   - the topology is refreshed on redirects and connection errors,
//     deduplicated and rate limited, and periodically.
//
// The wire protocol is go-redis v9, one plain client per node; every routing
// decision is made here.
package redisroute
