package redisroute

import (
	"maps"
	"slices"
	"time"
)

// Node states, as Status reports them: what routing does with the node now.
const (
	StateHealthy = "healthy" // routed to
	StateStalled = "stalled" // requests waiting, nothing answered: avoided and hedged around, not yet ejected
	StateEjected = "ejected" // not routed to; probed in the background
	StateProbing = "probing" // ejected, and answering probes: re-admitted after ReadmitAfter in a row
	// StateGone: the node was in an earlier slot map and is not in the one
	// in use, as when the cluster marked it failed (CLUSTER SLOTS leaves a
	// failed node out); it is not routed to, and listed for DepartedFor.
	StateGone = "gone"
)

// DepartedFor is how long Status lists a node that left the slot map.
const DepartedFor = 10 * time.Minute

// departed is a node of an earlier slot map: where it was, and since when
// it is missing.
type departed struct {
	shard int
	role  string
	since time.Time
}

// NodeStatus is a node as the router sees it.
type NodeStatus struct {
	Addr    string        `json:"addr"`
	Role    string        `json:"role"` // primary or replica
	Shard   int           `json:"shard"`
	Healthy bool          `json:"healthy"`
	Behind  bool          `json:"behind"` // a replica too far behind its primary to serve reads
	Latency time.Duration `json:"latency_ns"`
	// State is one of the State constants.
	State string `json:"state"`
	// EjectReason is why the node was last ejected (refused, unanswered,
	// stalled, auth, busy); empty while it is healthy.
	EjectReason string `json:"eject_reason,omitempty"`
	// EjectedAt is when; zero while healthy. For a node that is gone, it
	// is when it left the slot map.
	EjectedAt time.Time `json:"ejected_at,omitzero"`
	// Replication is the last replication check's finding on a replica
	// ("caught up", "its replication link is down", ...); empty before the
	// first check and for a primary.
	Replication string `json:"replication,omitempty"`
	// ReplicationAt is when that finding was made: a replica that stops
	// answering keeps its last one.
	ReplicationAt time.Time `json:"replication_at,omitzero"`
	// LagSeconds is how old the replica's last acknowledgement was, as its
	// primary reported it; -1 when not known.
	LagSeconds int `json:"lag_seconds"`
	// Inflight is how many requests are waiting on the node.
	Inflight int64 `json:"inflight"`
}

// Refreshed is the last topology refresh the router tried.
type Refreshed struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"` // initial, periodic, moved, conn_error, ...
	OK     bool      `json:"ok"`
	Error  string    `json:"error,omitempty"`
}

// Status is the router's view of the cluster, for the console and tools.
type Status struct {
	Policy string `json:"policy"`
	// SlotMapAt is when the slot map in use was fetched: how stale the
	// routing can be (the 2019 client used one a minute old).
	SlotMapAt time.Time `json:"slot_map_at"`
	// LastRefresh is the last refresh tried, which may have failed and left
	// the slot map older than it.
	LastRefresh Refreshed    `json:"last_refresh"`
	Nodes       []NodeStatus `json:"nodes"`
}

// Nodes lists every node of the current topology (Status adds the ones
// that left it).
func (r *Router) Nodes() []NodeStatus {
	now := r.clock.Now()
	var out []NodeStatus
	for i, s := range r.topo.Load().shards {
		for k, n := range s.nodes() {
			out = append(out, r.nodeStatus(n, i, k == 0, now))
		}
	}
	return out
}

// Status is the cluster as the router sees it now.
func (r *Router) Status() Status {
	st := Status{Policy: string(r.cfg.Policy), SlotMapAt: r.topo.Load().at, Nodes: r.Nodes()}
	if l := r.lastRefresh.Load(); l != nil {
		st.LastRefresh = *l
	}
	now := r.clock.Now()
	r.departedMu.Lock()
	defer r.departedMu.Unlock()
	for _, addr := range slices.Sorted(maps.Keys(r.departed)) {
		d := r.departed[addr]
		if now.Sub(d.since) > DepartedFor {
			delete(r.departed, addr)
			continue
		}
		st.Nodes = append(st.Nodes, NodeStatus{Addr: addr, Role: d.role, Shard: d.shard, State: StateGone, LagSeconds: -1,
			EjectReason: "not in the slot map", EjectedAt: d.since})
	}
	return st
}

// noteDeparted records the nodes of old that are not in now, and forgets
// the ones that are back.
func (r *Router) noteDeparted(old, now *topology) {
	in := now.byAddr()
	r.departedMu.Lock()
	defer r.departedMu.Unlock()
	if r.departed == nil {
		r.departed = map[string]departed{}
	}
	for addr, d := range r.departed {
		if in[addr] != nil || now.at.Sub(d.since) > DepartedFor {
			delete(r.departed, addr)
		}
	}
	for i, s := range old.shards {
		for k, n := range s.nodes() {
			if in[n.addr] != nil {
				continue
			}
			if _, known := r.departed[n.addr]; known {
				continue
			}
			role := "replica"
			if k == 0 {
				role = "primary"
			}
			r.departed[n.addr] = departed{shard: i, role: role, since: now.at}
		}
	}
}

func (r *Router) nodeStatus(n *node, shard int, primary bool, now time.Time) NodeStatus {
	ns := NodeStatus{Addr: n.addr, Role: "replica", Shard: shard,
		Latency: n.latency(), Inflight: n.inflight.Load(), LagSeconds: -1, State: StateHealthy}
	if primary {
		ns.Role = "primary"
	} else {
		ns.Behind = n.behind.Load()
		if v := n.repl.Load(); v != nil {
			ns.Replication, ns.ReplicationAt, ns.LagSeconds = v.reason, v.at, v.lag
		}
	}
	// One snapshot of health: ejection and re-admission change these
	// together under ejectMu.
	r.ejectMu.Lock()
	ns.Healthy = n.healthy()
	probing := n.probeOK > 0
	ns.EjectReason, ns.EjectedAt = n.ejectReason, n.ejectedAt
	r.ejectMu.Unlock()
	switch {
	case !ns.Healthy && probing:
		ns.State = StateProbing
	case !ns.Healthy:
		ns.State = StateEjected
	case r.stalled(n, now):
		ns.State = StateStalled
	}
	if ns.Healthy {
		ns.EjectReason, ns.EjectedAt = "", time.Time{}
	}
	return ns
}
