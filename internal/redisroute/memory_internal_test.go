package redisroute

import "testing"

func TestParseMemoryReadsRoomPolicyEvictionsAndConnections(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       NodeMemory
		ok, evicts bool
	}{
		{"no limit", "# Memory\r\nused_memory:1048576\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n# Stats\r\nevicted_keys:0\r\n",
			NodeMemory{Addr: "n", Used: 1 << 20, Policy: "noeviction"}, true, false},
		{"noeviction at a limit refuses writes, deletes nothing", "maxmemory:100\r\nmaxmemory_policy:noeviction\r\n",
			NodeMemory{Addr: "n", Max: 100, Policy: "noeviction"}, true, false},
		{"allkeys-lru with a limit", "evicted_keys:7\r\nused_memory:5\r\nmaxmemory:100\r\nmaxmemory_policy:allkeys-lru\r\n",
			NodeMemory{Addr: "n", Used: 5, Max: 100, Policy: "allkeys-lru", Evicted: 7}, true, true},
		{"volatile-lru: Apollo's keys have TTLs", "maxmemory:100\r\nmaxmemory_policy:volatile-lru\r\n",
			NodeMemory{Addr: "n", Max: 100, Policy: "volatile-lru"}, true, true},
		{"an evicting policy without a limit", "maxmemory:0\r\nmaxmemory_policy:allkeys-random\r\n",
			NodeMemory{Addr: "n", Policy: "allkeys-random"}, true, false},
		{"connections: clients, replicas' links and the cluster bus count against maxclients",
			"# Clients\r\nconnected_clients:12\r\ncluster_connections:8\r\nmaxclients:10000\r\n# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaxmemory_policy:noeviction\r\n",
			NodeMemory{Addr: "n", Policy: "noeviction", Clients: 22, MaxClients: 10000}, true, false},
		{"not INFO memory", "role:master\r\n", NodeMemory{Addr: "n"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseMemory("n", tc.info)
			if got != tc.want || ok != tc.ok || got.MayEvict() != tc.evicts {
				t.Errorf("parseMemory = %+v, %v (evicts %v), want %+v, %v (evicts %v)", got, ok, got.MayEvict(), tc.want, tc.ok, tc.evicts)
			}
		})
	}
}
