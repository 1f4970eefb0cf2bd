// Package console is Apollo's live console: the page an on-call engineer
// opens first, served on the admin listener under /console/.
//
// It shows the cluster as this instance's router sees it (shards × nodes
// with role, health, latency, errors, replication and the age of the slot
// map), the traffic per second (commands by result, hedges, retries,
// fallbacks, shed reads), the booking pipeline (outcomes per second, open
// bookings per partition and their owners across the fleet), the fleet
// (every instance's readiness and rules version, as each announces them in
// Redis) and Spampede (decisions per second, the rules in force, and the
// tripped cells on a map of their polygons).
//
// Every figure comes from two places only: the service's own Prometheus
// registry, gathered once a second by a Sampler (so the page and /metrics
// cannot disagree), and read-only views of the router and of Redis made on
// request. Pictures are drawn on the server with internal/chart, the
// project's one chart library; the page itself (static/, embedded) is plain
// HTML, CSS and JavaScript with no third-party code and no network access
// beyond this listener.
//
// Under apollo dev a Faults implementation adds a fault panel: kill, hang
// and resume a Redis node, start and stop a rainstorm. Its routes change
// things, so like every admin route that does, they need the admin token
// (checked by httpapi, which mounts the console).
package console
