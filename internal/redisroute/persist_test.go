package redisroute_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A primary that cannot persist refuses writes, and PING, with MISCONF, yet
// it answers and serves reads. It is found and exported (Redis says why
// only in INFO persistence and its log). Once ejected (here it hung for a while), it
// is re-admitted when it answers again, still unable to persist: the
// probes that re-admit nodes must not take its MISCONF for silence, or
// its reads would go elsewhere until its disk is mended.
func TestAPrimaryThatCannotPersistIsReadmittedAndServesReads(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	keys := seed(t, c)[:20]
	ctx := ctxFor(t, 60*time.Second)
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg, func(cfg *redisroute.Config) {
		cfg.Policy, cfg.MemoryCheckInterval = redisroute.Primary, 50*time.Millisecond
	})
	primary := c.Primary(ctx, 0)
	waitMetric(t, reg, "apollo_redis_node_cannot_persist", primary.Addr, func(v float64) bool { return v == 0 })
	if err := primary.FailPersistence(ctx); err != nil {
		t.Fatal(err)
	}
	known, unknown := r.Persistence(ctx)
	if len(known) != 2 || len(unknown) != 0 {
		t.Fatalf("persistence of a 1 × 1 cluster: %+v, not answered: %v", known, unknown)
	}
	for _, p := range known {
		if p.RefusesWrites != (p.Addr == primary.Addr) || p.SnapshotFailed != p.RefusesWrites || p.AOFFailed {
			t.Fatalf("%+v: want only %s's snapshot found failed", known, primary.Addr)
		}
	}
	waitMetric(t, reg, "apollo_redis_node_cannot_persist", primary.Addr, func(v float64) bool { return v == 1 })
	t.Cleanup(func() {
		_ = primary.Resume()
		if err := primary.RestorePersistence(context.Background()); err != nil {
			t.Error(err)
		}
	})
	read := func() redisroute.Results {
		cmds := make([]redisroute.Cmd, len(keys))
		for i, k := range keys {
			cmds[i] = redisroute.Read("HMGET", k, "status")
		}
		callCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return r.Exec(callCtx, cmds)
	}

	if err := primary.Pause(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); healthy(r, primary.Addr); {
		if time.Now().After(deadline) {
			t.Fatalf("%s is hung but was not ejected", primary.Addr)
		}
		read()
	}
	if err := primary.Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !healthy(r, primary.Addr); {
		if time.Now().After(deadline) {
			t.Fatalf("%s answers again (MISCONF to PING) but was not re-admitted", primary.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Reads go to primaries under this policy, and to a replica only while
	// the primary is ejected: served by the primary, it is back in routing.
	for _, x := range read() {
		if x.Err != nil || x.Node != primary.Addr {
			t.Fatalf("a read once the primary answers again: %v from %s, want it served by %s", x.Err, x.Node, primary.Addr)
		}
	}
	if err := primary.RestorePersistence(ctx); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, reg, "apollo_redis_node_cannot_persist", primary.Addr, func(v float64) bool { return v == 0 })
}
