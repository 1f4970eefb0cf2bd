package redisroute_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A primary restarted at once, as a supervisor restarts a crashed
// process, is back before any failover: its replicas copy whatever it came
// back with. The router finds the restart and says whether the data came
// with it: kept with an append-only file, lost without persistence (the
// shard's data gone, which nothing else would say).
func TestAPrimaryRestartedBeforeAFailoverIsFoundAndALossSaid(t *testing.T) {
	for _, tc := range []struct {
		persistence localcluster.Persistence
		want, not   string
	}{
		{localcluster.PersistenceAOF, "kept", "lost"},
		{localcluster.PersistenceNone, "lost", "kept"},
	} {
		t.Run(string(tc.persistence), func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) {
				cfg.Primaries, cfg.Replicas, cfg.Persistence = 1, 1, tc.persistence
			})
			seed(t, c)
			ctx := ctxFor(t, 60*time.Second)
			reg := prometheus.NewRegistry()
			newRouterOn(t, c, reg, func(cfg *redisroute.Config) { cfg.MemoryCheckInterval = 50 * time.Millisecond })
			primary := c.Primary(ctx, 0)
			// A node's memory gauges are set after its process was noted,
			// from the same round trip: the primary's process is recorded.
			waitMetric(t, reg, "apollo_redis_node_used_memory_bytes", primary.Addr, func(v float64) bool { return v > 0 })
			if err := primary.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			waitMetric(t, reg, "apollo_redis_primary_restarts_total", tc.want, func(v float64) bool { return v == 1 })
			if v, _ := counter(t, reg, "apollo_redis_primary_restarts_total", tc.not); v != 0 {
				t.Errorf("primary restarts with data %s = %v, want 0", tc.not, v)
			}
			if got := c.Primary(ctx, 0); got != primary {
				t.Errorf("the shard's primary is %v, want %s: no failover in this test", got, primary.Addr)
			}
		})
	}
}
