package clustercheck

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Memory is what INFO memory and clients say about a node's room.
type Memory struct {
	UsedBytes int64  `json:"used_bytes"`
	MaxBytes  int64  `json:"max_bytes"` // maxmemory; 0: no limit
	Policy    string `json:"policy"`    // maxmemory_policy
	// Clients is the connections the node counts against its maxclients
	// (clients, replicas and cluster links); MaxClients is 0 when the node
	// does not say (Redis before 6.2).
	Clients    int64 `json:"clients"`
	MaxClients int64 `json:"max_clients,omitempty"`
}

func readMemory(ctx context.Context, c *redis.Client, addr string) *Memory {
	m, err := redisroute.ReadMemory(ctx, c, addr)
	if err != nil {
		return nil
	}
	return &Memory{UsedBytes: m.Used, MaxBytes: m.Max, Policy: m.Policy, Clients: m.Clients, MaxClients: m.MaxClients}
}

// nearFull is the share of maxmemory past which a node is warned about:
// at the limit a noeviction node refuses every write.
const nearFull = 0.9

// memoryFindings says which nodes delete keys when full (Apollo refuses
// to start on them), and which are close to their memory or connection
// limit.
func memoryFindings(nodes []Node) []Finding {
	var out []Finding
	for _, n := range nodes {
		m := n.Memory
		if !n.Reachable || m == nil {
			continue
		}
		if m.MaxClients > 0 && float64(m.Clients) >= nearFull*float64(m.MaxClients) {
			out = append(out, Finding{Severity: Warning, Code: "clients_near_max", Node: n.Addr,
				Message: fmt.Sprintf("has %d connections of its maxclients %d: at the limit it greets every new connection with a refusal and closes it, so an Apollo instance that starts, or a pool that grows, gets none; find what holds them (CLIENT LIST) or raise maxclients", m.Clients, m.MaxClients)})
		}
		if m.MaxBytes <= 0 {
			continue
		}
		if m.Policy != "noeviction" {
			out = append(out, Finding{Severity: Critical, Code: "memory_may_evict", Node: n.Addr,
				Message: fmt.Sprintf("maxmemory %d with maxmemory-policy %s: when full the node deletes keys, bookings and reservations among them, without an error (volatile-* too: Apollo's records have TTLs). apollo serve refuses to start on it; set maxmemory-policy noeviction", m.MaxBytes, m.Policy)})
		}
		if used := float64(m.UsedBytes) / float64(m.MaxBytes); used > nearFull {
			out = append(out, Finding{Severity: Warning, Code: "memory_near_full", Node: n.Addr,
				Message: fmt.Sprintf("uses %.0f%% of its maxmemory (%d of %d bytes): at the limit it refuses every write (OOM), and Apollo answers 503 for every change on its shard", used*100, m.UsedBytes, m.MaxBytes)})
		}
	}
	return out
}
