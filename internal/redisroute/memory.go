package redisroute

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A node with a maxmemory and a policy other than noeviction deletes keys
// to make room when it reaches the limit: a booking reported created, a
// driver's reservation, a partition's lease, gone without an error. Redis
// says so only in INFO, so the router asks every node for INFO memory and
// INFO stats in the background and exports what it finds; a node at its
// limit under noeviction refuses writes instead (OOM), which the store
// turns into a 503, so how close each node is to it is exported too. The
// same round trip asks INFO clients: a node at its maxclients refuses new
// connections (setupconn.go), so its room for them is exported as well.

// NodeMemory is what a node's INFO says about its room.
type NodeMemory struct {
	Addr string `json:"addr"`
	// Used is used_memory; Max is maxmemory (0: no limit).
	Used int64 `json:"used_bytes"`
	Max  int64 `json:"max_bytes"`
	// Policy is maxmemory_policy.
	Policy string `json:"policy"`
	// Evicted is evicted_keys: keys the node deleted to make room since it
	// started.
	Evicted int64 `json:"evicted_keys"`
	// Clients is what the node counts against MaxClients: its clients,
	// its replicas' links and its cluster bus connections. At MaxClients it
	// greets each new connection with a refusal and closes it.
	Clients    int64 `json:"clients"`
	MaxClients int64 `json:"maxclients"`

	run nodeRun // the process behind the node, asked in the same round trip (restart_data.go)
}

// MayEvict reports whether the node deletes keys when it reaches its
// limit. volatile-* policies count: Apollo's driver records, bookings and
// leases have TTLs.
func (m NodeMemory) MayEvict() bool { return m.Max > 0 && m.Policy != "noeviction" }

// parseMemory reads the text of INFO memory, stats, clients and
// replication, in any order.
// ok is false when maxmemory_policy is missing (not an INFO of these).
func parseMemory(addr, info string) (m NodeMemory, ok bool) {
	m.Addr = addr
	infoFields(info, func(k, v string) {
		switch k {
		case "used_memory":
			m.Used, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory":
			m.Max, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory_policy":
			m.Policy, ok = v, true
		case "evicted_keys":
			m.Evicted, _ = strconv.ParseInt(v, 10, 64)
		case "connected_clients", "connected_slaves", "cluster_connections":
			k, _ := strconv.ParseInt(v, 10, 64)
			m.Clients += k
		case "maxclients":
			m.MaxClients, _ = strconv.ParseInt(v, 10, 64)
		}
	})
	return m, ok
}

// infoFields calls f with each "field:value" line of an INFO text.
func infoFields(info string, f func(k, v string)) {
	for _, line := range strings.Split(info, "\n") {
		if k, v, found := strings.Cut(strings.TrimRight(line, "\r"), ":"); found {
			f(k, v)
		}
	}
}

// ReadMemory reads one node's room over c, as the memory check does (INFO
// memory, stats and clients).
func ReadMemory(ctx context.Context, c *redis.Client, addr string) (NodeMemory, error) {
	text, err := readInfo(ctx, c, "memory", "stats", "clients")
	if err != nil {
		return NodeMemory{}, err
	}
	m, ok := parseMemory(addr, text)
	if !ok {
		return NodeMemory{}, fmt.Errorf("%s: INFO memory has no maxmemory_policy", addr)
	}
	return m, nil
}

// Memory asks every node of the current topology for its room now, each
// through its probe pool and bounded by ctx. Nodes that do not answer
// (down, hung, or an ACL that denies INFO) are listed in unknown. The
// same round trip asks for the process behind each node (run).
func (r *Router) Memory(ctx context.Context) (known []NodeMemory, unknown []string) {
	return askEveryNode(r.topo.Load(), func(n *node) (NodeMemory, bool) {
		text, err := readInfo(ctx, n.probe, "memory", "stats", "clients", "server", "replication", "keyspace", "persistence")
		if err != nil {
			return NodeMemory{}, false
		}
		m, ok := parseMemory(n.addr, text)
		m.run, _ = parseNodeRun(n.addr, text)
		return m, ok
	})
}

// readInfo reads INFO sections in one round trip, as one text.
func readInfo(ctx context.Context, c *redis.Client, sections ...string) (string, error) {
	pipe := c.Pipeline()
	var cmds []*redis.StringCmd
	for _, s := range sections {
		cmds = append(cmds, pipe.Info(ctx, s))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return "", err
	}
	var text strings.Builder
	for _, c := range cmds {
		text.WriteString(c.Val() + "\n")
	}
	return text.String(), nil
}

// askEveryNode asks every node of t at once and returns the answers of
// those that gave one, and the addresses of those that did not.
func askEveryNode[T any](t *topology, ask func(n *node) (T, bool)) (known []T, unknown []string) {
	out := make([]T, len(t.nodes))
	answered := make([]bool, len(t.nodes))
	var wg sync.WaitGroup
	for i, n := range t.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], answered[i] = ask(n)
		}()
	}
	wg.Wait()
	for i, v := range out {
		if answered[i] {
			known = append(known, v)
		} else {
			unknown = append(unknown, t.nodes[i].addr)
		}
	}
	return known, unknown
}

// checkMemory, every MemoryCheckInterval, exports every node's room and
// logs a node that starts to evict keys, or has evicted some. A node that
// left the topology while it was asked is not exported (its gauges were
// deleted when it left, and an alert on a stale one would never resolve).
func (r *Router) checkMemory() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.MemoryCheckInterval)
	defer cancel()
	known, _ := r.Memory(ctx)
	in := r.topo.Load().byAddr()
	for _, m := range known {
		n := in[m.Addr]
		if n == nil {
			continue
		}
		r.noteMemory(m) // before the gauges: once they are set, the node's process is noted
		if m.Max == 0 || m.Used < m.Max {
			n.full.Store(false) // room again: fences are plain SETs (fence.go)
		}
		r.m.memoryUsed.WithLabelValues(m.Addr).Set(float64(m.Used))
		r.m.memoryMax.WithLabelValues(m.Addr).Set(float64(m.Max))
		mayEvict := 0.0
		if m.MayEvict() {
			mayEvict = 1
		}
		r.m.memoryMayEvict.WithLabelValues(m.Addr).Set(mayEvict)
		r.m.evictedKeys.WithLabelValues(m.Addr).Set(float64(m.Evicted))
		r.m.clients.WithLabelValues(m.Addr).Set(float64(m.Clients))
		r.m.maxClients.WithLabelValues(m.Addr).Set(float64(m.MaxClients))
	}
	r.memMu.Lock()
	for addr := range r.memLast {
		if in[addr] == nil {
			delete(r.memLast, addr)
		}
	}
	r.memMu.Unlock()
}

// noteMemory logs what changed since the node's last check: an eviction
// policy set or cleared, keys evicted.
func (r *Router) noteMemory(m NodeMemory) {
	r.memMu.Lock()
	last, seen := r.memLast[m.Addr]
	if m.run.Loading || m.run.RunID == "" {
		// Judged once loaded (or once INFO server answers): the process
		// of the check before stays the one to compare with.
		m.run = last.run
	}
	r.memLast[m.Addr] = m
	r.memMu.Unlock()
	r.noteRestart(m.Addr, last.run, seen, m.run)
	switch {
	case m.MayEvict() && (!seen || !last.MayEvict()):
		r.log.Error("redis node may delete keys to make room: bookings, reservations and leases on it can vanish; set maxmemory-policy noeviction",
			"node", m.Addr, "policy", m.Policy, "maxmemory", m.Max)
	case !m.MayEvict() && seen && last.MayEvict():
		r.log.Info("redis node no longer evicts keys", "node", m.Addr, "policy", m.Policy, "maxmemory", m.Max)
	}
	evicted := m.Evicted - last.Evicted
	if m.Evicted < last.Evicted {
		evicted = m.Evicted // the node restarted: its count began again
	}
	if seen && evicted > 0 {
		r.log.Error("redis node evicted keys: Apollo's records on it may be lost", "node", m.Addr, "evicted", evicted, "policy", m.Policy)
	}
}
