package clustercheck

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Memory is what INFO memory says about a node's room.
type Memory struct {
	UsedBytes int64  `json:"used_bytes"`
	MaxBytes  int64  `json:"max_bytes"` // maxmemory; 0: no limit
	Policy    string `json:"policy"`    // maxmemory_policy
}

func readMemory(ctx context.Context, c *redis.Client) *Memory {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil || infoField(info, "maxmemory_policy") == "" {
		return nil
	}
	m := &Memory{Policy: infoField(info, "maxmemory_policy")}
	m.UsedBytes, _ = strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
	m.MaxBytes, _ = strconv.ParseInt(infoField(info, "maxmemory"), 10, 64)
	return m
}

// nearFull is the share of maxmemory past which a node is warned about:
// at the limit a noeviction node refuses every write.
const nearFull = 0.9

// memoryFindings says which nodes delete keys when full (Apollo refuses
// to start on them) and which are close to their limit.
func memoryFindings(nodes []Node) []Finding {
	var out []Finding
	for _, n := range nodes {
		m := n.Memory
		if !n.Reachable || m == nil || m.MaxBytes <= 0 {
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
