package redisroute_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A node that deletes keys to make room at its maxmemory is found and
// exported, and so are the keys it deletes: Redis says so only in INFO,
// and a booking or a reservation it deletes is gone without an error.
func TestANodeThatEvictsKeysIsFoundAndItsEvictionsCounted(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg, func(cfg *redisroute.Config) { cfg.MemoryCheckInterval = 50 * time.Millisecond })
	ctx := ctxFor(t, 30*time.Second)
	primary := c.Primary(ctx, 0)
	admin := primary.Client()
	defer admin.Close()
	t.Cleanup(func() {
		admin := primary.Client()
		defer admin.Close()
		admin.ConfigSet(context.Background(), "maxmemory-policy", "noeviction")
		admin.ConfigSet(context.Background(), "maxmemory", "0")
	})

	known, unknown := r.Memory(ctx)
	if len(known) != 2 || len(unknown) != 0 {
		t.Fatalf("memory of a 1 × 1 cluster: %+v, not answered: %v", known, unknown)
	}
	for _, m := range known {
		if m.MayEvict() || m.Policy != "noeviction" {
			t.Fatalf("a node as started: %+v, want noeviction", m)
		}
	}
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-random").Err(); err != nil {
		t.Fatal(err)
	}
	if m := memoryOf(t, ctx, r, primary.Addr); m.MayEvict() {
		t.Fatalf("allkeys-random without a maxmemory: %+v, want no eviction (there is no limit to make room under)", m)
	}
	used := memoryOf(t, ctx, r, primary.Addr).Used
	if err := admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+512<<10, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if m := memoryOf(t, ctx, r, primary.Addr); !m.MayEvict() || m.Policy != "allkeys-random" || m.Max != used+512<<10 {
		t.Fatalf("allkeys-random with a maxmemory: %+v, want it found to evict", m)
	}
	waitMetric(t, reg, "apollo_redis_node_may_evict", primary.Addr, func(v float64) bool { return v == 1 })

	// 2 MB into room for 512 KB: the node evicts.
	value := string(make([]byte, 1024))
	var writes []redisroute.Cmd
	for i := range 2048 {
		writes = append(writes, redisroute.Write("SET", fmt.Sprintf("fill:%d", i), value))
	}
	r.Exec(ctx, writes) // some are refused (OOM) when evicting cannot keep up
	if m := memoryOf(t, ctx, r, primary.Addr); m.Evicted == 0 {
		t.Fatalf("after 2 MB written into 512 KB of room: %+v, want keys evicted", m)
	}
	waitMetric(t, reg, "apollo_redis_node_evicted_keys", primary.Addr, func(v float64) bool { return v > 0 })
}

// memoryOf is the node at addr in r.Memory.
func memoryOf(t *testing.T, ctx context.Context, r *redisroute.Router, addr string) redisroute.NodeMemory {
	t.Helper()
	known, _ := r.Memory(ctx)
	for _, m := range known {
		if m.Addr == addr {
			return m
		}
	}
	t.Fatalf("no memory of %s in %+v", addr, known)
	return redisroute.NodeMemory{}
}

// waitMetric waits until the series of name for node satisfies ok.
func waitMetric(t *testing.T, reg *prometheus.Registry, name, node string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, series := counter(t, reg, name, node)
		if series == 1 && ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{node=%q} = %v (%d series)", name, node, v, series)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
