package clustercheck

import (
	"strings"
	"testing"
)

func TestMemoryFindingsNameNodesThatEvictOrAreNearlyFull(t *testing.T) {
	node := func(addr string, m *Memory) Node { return Node{Addr: addr, Reachable: true, Memory: m} }
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string // code:node:what the message says
	}{
		{"no limit: nothing to say", []Node{node("a", &Memory{UsedBytes: 1 << 30, Policy: "allkeys-lru"})}, nil},
		{"noeviction with room", []Node{node("a", &Memory{UsedBytes: 50, MaxBytes: 100, Policy: "noeviction"})}, nil},
		{"volatile-lru evicts Apollo's keys", []Node{node("a", &Memory{UsedBytes: 50, MaxBytes: 100, Policy: "volatile-lru"})},
			[]string{"memory_may_evict:a:maxmemory-policy volatile-lru"}},
		{"nearly full", []Node{node("a", &Memory{UsedBytes: 95, MaxBytes: 100, Policy: "noeviction"})},
			[]string{"memory_near_full:a:uses 95%"}},
		{"nearly out of connections", []Node{node("a", &Memory{Clients: 95, MaxClients: 100, Policy: "noeviction"})},
			[]string{"clients_near_max:a:95 connections of its maxclients 100"}},
		{"connections with room, or no maxclients said", []Node{node("a", &Memory{Clients: 50, MaxClients: 100, Policy: "noeviction"}), node("b", &Memory{Clients: 95, Policy: "noeviction"})}, nil},
		{"unread and unreachable nodes are not judged", []Node{node("a", nil), {Addr: "b", Memory: &Memory{MaxBytes: 1, Policy: "allkeys-lru"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := memoryFindings(tc.nodes)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings %+v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				parts := strings.SplitN(w, ":", 3)
				if got[i].Code != parts[0] || got[i].Node != parts[1] || !strings.Contains(got[i].Message, parts[2]) {
					t.Errorf("finding %d = %s on %s %q, want %s on %s saying %q", i, got[i].Code, got[i].Node, got[i].Message, parts[0], parts[1], parts[2])
				}
			}
		})
	}
	if f := memoryFindings([]Node{node("a", &Memory{MaxBytes: 100, Policy: "allkeys-random"})}); f[0].Severity != Critical {
		t.Errorf("a node that evicts is %v, want critical", f[0].Severity)
	}
}
