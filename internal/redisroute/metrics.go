package redisroute

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are registered on the registry the router is given. Node labels
// are bounded by the cluster's size; there is no per-key label.
type metrics struct {
	latency       *prometheus.HistogramVec
	nodeErrors    *prometheus.CounterVec
	ejections     *prometheus.CounterVec
	ejected       *prometheus.GaugeVec
	replicaBehind *prometheus.GaugeVec
	// memory.go: each node's room, from INFO memory and INFO stats.
	memoryUsed, memoryMax, memoryMayEvict, evictedKeys *prometheus.GaugeVec
	clients, maxClients                                *prometheus.GaugeVec
	cannotPersist                                      *prometheus.GaugeVec   // persist.go: whether each node can write its data to disk
	primaryRestarts                                    *prometheus.CounterVec // restart_data.go: primaries restarted before a failover, by what they kept
	clockOffset                                        *prometheus.GaugeVec
	passwordChanges, passwordFileErrors                prometheus.Counter   // credentials.go
	clientCertExpiry                                   prometheus.Gauge     // tlscerts.go
	rightsDenied                                       *prometheus.GaugeVec // rights.go
	nodeCertExpiry                                     *prometheus.GaugeVec
	clientCertFileErrors                               prometheus.Counter
	clusterOffset                                      prometheus.Gauge
	refreshes                                          *prometheus.CounterVec
	refreshDeduped                                     prometheus.Counter
	kept                                               prometheus.Counter // omitted.go
	hedges                                             *prometheus.CounterVec
	retries                                            *prometheus.CounterVec
	fallbacks                                          *prometheus.CounterVec
	commands                                           *prometheus.CounterVec
	// subscriptionsLost counts shard-channel subscriptions ended because
	// messages may have been missed, by why.
	subscriptionsLost *prometheus.CounterVec
	// redirects counts the replies that say a slot is moving or moved.
	redirects                      *prometheus.CounterVec
	redirMoved, redirAsk, tryAgain prometheus.Counter
	// proof.go: each replica a write's proof looked at, by what it found.
	proofReplicas                                                        *prometheus.CounterVec
	proofListed, proofAsked, proofOutOfStep, proofDown, proofUnconfirmed prometheus.Counter

	// The label values of the request path, resolved once: a call counts
	// every command, and a label lookup per command is a hash of its value.
	cmdOK, cmdError, cmdAmbiguous, cmdUnconfirmed prometheus.Counter
	hedgeSent, hedgeWon, hedgeDenied              prometheus.Counter
	retrySent, retryDenied                        prometheus.Counter
	fallbackSent, fallbackShed                    prometheus.Counter
}

type nodeMetrics struct {
	latency prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apollo_redis_node_latency_seconds", Help: "Time from sending (or queueing, for reads merged behind another pipeline) to the reply of successful requests (sub-pipelines) per node.",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"node"}),
		nodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_node_errors_total", Help: "Failed requests per node, by kind (unsent, unanswered, auth: the node refused our credentials, client certificate or rights, busy: it answered BUSY, full: it refused a new connection at maxclients). auth also counts the refusals the probes of an ejected node meet, about ten a second while they last.",
		}, []string{"node", "kind"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_node_ejections_total", Help: "Times a node was ejected from routing, by reason.",
		}, []string{"node", "reason"}),
		ejected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_ejected", Help: "1 while a node is ejected from routing.",
		}, []string{"node"}),
		replicaBehind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_replica_behind", Help: "1 while a replica is too far behind its primary to serve reads (link down, or lag above the bound).",
		}, []string{"node"}),
		memoryUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_used_memory_bytes", Help: "used_memory of each node (INFO memory), at the last memory check.",
		}, []string{"node"}),
		memoryMax: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_maxmemory_bytes", Help: "maxmemory of each node (0: no limit); at it, a noeviction node refuses writes (OOM).",
		}, []string{"node"}),
		memoryMayEvict: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_may_evict", Help: "1 while a node has a maxmemory and a policy other than noeviction: at its limit it deletes keys, Apollo's records among them.",
		}, []string{"node"}),
		evictedKeys: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_evicted_keys", Help: "evicted_keys of each node (INFO stats): keys it deleted to make room since it started. Any increase may have lost bookings or reservations.",
		}, []string{"node"}),
		clients: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_clients", Help: "Connections each node counts against its maxclients (INFO: connected_clients + connected_slaves + cluster_connections), at the last memory check.",
		}, []string{"node"}),
		maxClients: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_maxclients", Help: "maxclients of each node: at it, the node greets every new connection with a refusal and closes it (Apollo's open connections go on).",
		}, []string{"node"}),
		cannotPersist: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_cannot_persist", Help: "1 while a node answers PING with MISCONF: its last RDB snapshot or AOF write failed, and it refuses every write until one succeeds (a replica crashes at its next replicated write).",
		}, []string{"node"}),
		primaryRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_primary_restarts_total", Help: "Primaries found restarted (a new run_id, a primary before and after), by data: kept (back from an append-only file, or a snapshot with at least half the keys of the check before), lost (fewer, or none: its replicas copy it, and its shard's data is gone).",
		}, []string{"data"}),
		clockOffset: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_clock_offset_seconds", Help: "Each node's clock (TIME) minus this instance's, at the last precise reading. Write deadlines are moved by it; Redis still expires keys by its own clock.",
		}, []string{"node"}),
		passwordChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apollo_redis_password_changes_total", Help: "Times --redis-password-file was found holding a new password (rotated); new connections use it from then on. After a rotation every instance should count one more before the old password is removed.",
		}),
		passwordFileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apollo_redis_password_file_errors_total", Help: "Reads of --redis-password-file (for each new connection, and every 5 s) that failed: gone, empty, unreadable. New connections are given the password read before.",
		}),
		clientCertExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apollo_redis_tls_client_cert_expiry_timestamp_seconds", Help: "When the TLS client certificate presented to Redis (--redis-tls-cert) expires, Unix time; 0 without one. The files are read again for every new connection: a certificate renewed on disk is presented from then on.",
		}),
		nodeCertExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_node_cert_expiry_timestamp_seconds", Help: "When the TLS certificate each node of the slot map presented at its last handshake expires, Unix time, exported with each node check (5 s); 0 without TLS, or before a handshake. Once it has expired, every new connection to the node fails verification. Connections in use are kept: after a renewal the value changes as connections are made again.",
		}, []string{"node"}),
		rightsDenied: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_redis_rights_denied", Help: "How many of the commands Apollo needs (or its keys, or its channels) each node's ACL denies Apollo's user, at the last check (every 30 s; 0 before it). Each denial fails what needs it on that node: without INFO, every acknowledged write and every booking. apollo check names them.",
		}, []string{"node"}),
		clientCertFileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apollo_redis_tls_cert_file_errors_total", Help: "Reads of --redis-tls-cert and --redis-tls-key (for each new connection, and every 5 s) that failed: gone, unreadable, or not a pair (as for a moment while a certificate and its key are renewed one after the other). New connections are given the certificate read before.",
		}),
		clusterOffset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apollo_cluster_clock_offset_seconds", Help: "The cluster's clock (the median of the nodes' offsets) minus this instance's own. Apollo keeps time by the cluster's, so instances agree whatever their own clocks; a large value says this instance's host clock is off.",
		}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_topology_refreshes_total", Help: "Topology refreshes, by reason and result.",
		}, []string{"reason", "result"}),
		refreshDeduped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apollo_redis_topology_refresh_requests_deduplicated_total", Help: "Refresh requests folded into one already pending.",
		}),
		kept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apollo_redis_omitted_replicas_kept_total", Help: "Replicas a topology refresh kept though CLUSTER SLOTS left them out, because their primary listed them online and in step (one per refresh and replica).",
		}),
		hedges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_hedges_total", Help: "Read commands hedged to a second node: sent, won (the hedge answered first), denied (budget).",
		}, []string{"outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_retries_total", Help: "Retries: sent, or denied by the budget.",
		}, []string{"outcome"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_read_fallbacks_total", Help: "Reads sent to a primary because no replica could serve them: sent, or shed by the primary's fallback cap.",
		}, []string{"outcome"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_commands_total", Help: "Commands by result: ok, error, ambiguous (a write that may have run), unconfirmed (a write not acknowledged by enough replicas).",
		}, []string{"result"}),
		proofReplicas: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_write_proof_replicas_total",
			Help: "Replicas a write (or a confirmed read's fence) whose WAIT met its count was checked against, by verdict: listed (its primary lists it at or past the write), holds (it says so itself), out_of_step (held behind by the replication check: not waited for), down (did not answer, or refused: a failed node), unconfirmed (answered as a primary, copied another history, or stayed behind the write: the write is not reported done).",
		}, []string{"verdict"}),
		subscriptionsLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_subscriptions_lost_total", Help: "Shard-channel subscriptions ended because messages may have been missed: resubscribed (reconnect), moved (slot owner changed), ejected (node), closed.",
		}, []string{"why"}),
		redirects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_redis_redirects_total", Help: "Replies that say a command's slot moved or is moving, by kind: moved (MOVED: the slot map was old), ask (ASK: the key is on the other side of a migration), tryagain (TRYAGAIN: a multi-key command whose keys a migration split; it did not run, and fails until the migration ends).",
		}, []string{"kind"}),
	}
	// Every label value known in advance exists from the start, so that
	// rules and dashboards read 0, not an absent series, while nothing happens.
	m.fallbackSent, m.fallbackShed = m.fallbacks.WithLabelValues("sent"), m.fallbacks.WithLabelValues("shed")
	m.cmdOK, m.cmdError = m.commands.WithLabelValues("ok"), m.commands.WithLabelValues("error")
	m.cmdAmbiguous, m.cmdUnconfirmed = m.commands.WithLabelValues("ambiguous"), m.commands.WithLabelValues("unconfirmed")
	m.hedgeSent, m.hedgeWon, m.hedgeDenied = m.hedges.WithLabelValues("sent"), m.hedges.WithLabelValues("won"), m.hedges.WithLabelValues("denied")
	m.retrySent, m.retryDenied = m.retries.WithLabelValues("sent"), m.retries.WithLabelValues("denied")
	m.redirMoved, m.redirAsk, m.tryAgain = m.redirects.WithLabelValues("moved"), m.redirects.WithLabelValues("ask"), m.redirects.WithLabelValues("tryagain")
	m.proofListed, m.proofAsked = m.proofReplicas.WithLabelValues("listed"), m.proofReplicas.WithLabelValues("holds")
	m.proofOutOfStep, m.proofDown = m.proofReplicas.WithLabelValues("out_of_step"), m.proofReplicas.WithLabelValues("down")
	m.proofUnconfirmed = m.proofReplicas.WithLabelValues("unconfirmed")
	m.primaryRestarts.WithLabelValues("kept") // from 0, so that the first loss is an increase
	m.primaryRestarts.WithLabelValues("lost")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.latency, m.nodeErrors, m.ejections, m.ejected, m.replicaBehind, m.memoryUsed, m.memoryMax, m.memoryMayEvict, m.evictedKeys, m.clients, m.maxClients, m.cannotPersist, m.primaryRestarts, m.clockOffset, m.passwordChanges, m.passwordFileErrors, m.clientCertExpiry, m.nodeCertExpiry, m.rightsDenied, m.clientCertFileErrors, m.clusterOffset, m.refreshes, m.refreshDeduped, m.kept, m.hedges, m.retries, m.fallbacks, m.commands, m.subscriptionsLost, m.proofReplicas, m.redirects} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("register redisroute metrics"), err)
		}
	}
	return m, nil
}

func (m *metrics) forNode(addr string) nodeMetrics {
	m.start(addr, false)
	return nodeMetrics{latency: m.latency.WithLabelValues(addr)}
}

// start makes a node's series exist: its ejected gauge, and its ejections
// and errors, none yet for each reason and kind (increase() misses a
// counter's first value).
// A node is in routing, and not behind, until found otherwise.
func (m *metrics) start(addr string, ejected bool) {
	g := m.ejected.WithLabelValues(addr)
	if ejected {
		g.Set(1)
	} else {
		g.Set(0)
	}
	for _, reason := range ejectReasons {
		m.ejections.WithLabelValues(addr, reason)
	}
	for _, kind := range nodeErrorKinds {
		m.nodeErrors.WithLabelValues(addr, kind)
	}
	m.nodeCertExpiry.WithLabelValues(addr)
	m.rightsDenied.WithLabelValues(addr)
}

// followTopology keeps the per-node series with the slot map as it changes
// from old to now. It deletes the series of the nodes that left (removed
// or replaced; Redis leaves failed nodes out of CLUSTER SLOTS): an ejected
// node that left would otherwise read ejected until the process restarts,
// and its alert never resolve. It starts again those of the nodes that
// came back, as a restarted node does.
func (m *metrics) followTopology(old, now *topology) {
	was := old.byAddr()
	for _, n := range now.nodes {
		if was[n.addr] == nil {
			m.start(n.addr, n.ejected.Load())
		}
	}
	in := now.byAddr()
	for _, n := range old.nodes {
		if in[n.addr] == nil {
			m.ejected.DeleteLabelValues(n.addr)
			m.ejections.DeletePartialMatch(prometheus.Labels{"node": n.addr})
			m.nodeErrors.DeletePartialMatch(prometheus.Labels{"node": n.addr})
			m.replicaBehind.DeleteLabelValues(n.addr)
			for _, g := range []*prometheus.GaugeVec{m.memoryUsed, m.memoryMax, m.memoryMayEvict, m.evictedKeys, m.clients, m.maxClients, m.cannotPersist, m.clockOffset, m.nodeCertExpiry, m.rightsDenied} {
				g.DeleteLabelValues(n.addr)
			}
		}
	}
}
