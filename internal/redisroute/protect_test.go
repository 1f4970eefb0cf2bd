package redisroute_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// TestPrimaryFallbackIsCappedAndVisible kills both replicas of a shard: reads
// fall back to its primary, but only up to the primary's fallback cap, and
// both the fallbacks and the shed reads show in the metrics.
func TestPrimaryFallbackIsCappedAndVisible(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 2 * time.Second })
	keys := seed(t, c)
	ctx := ctxFor(t, 30*time.Second)
	reg := prometheus.NewRegistry()
	cfg := redisroute.DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	cfg.PrimaryFallbackRate = 200 // commands per second
	r, err := redisroute.New(ctx, cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, n := range c.Replicas(ctx, 0) {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	shed, served, otherShards := 0, 0, 0
	for i := 0; i < 200; i++ {
		var cmds []redisroute.Cmd
		for k := 0; k < 20; k++ {
			cmds = append(cmds, redisroute.Read("HMGET", keys[(i*20+k)%len(keys)], "status"))
		}
		for k, res := range r.Exec(ctx, cmds) {
			if redisroute.Slot(cmds[k].Key) >= 16384/3 { // not shard 0
				otherShards++
				if res.Err != nil {
					t.Fatalf("a read on a healthy shard failed: %v", res.Err)
				}
			}
			switch {
			case res.Err == nil:
				served++
			case errors.Is(res.Err, redisroute.ErrUnavailable) && strings.Contains(res.Err.Error(), "fallback read cap"):
				shed++
			default:
				t.Fatalf("unexpected error: %v\nnodes: %+v", res.Err, r.Nodes())
			}
		}
	}
	if shed == 0 {
		t.Errorf("no read was shed with both replicas of a shard dead and a fallback cap of 200/s")
	}
	if served <= otherShards {
		t.Errorf("served %d reads, no more than the %d on healthy shards: nothing fell back to the primary", served, otherShards)
	}
	sent, _ := counter(t, reg, "apollo_redis_read_fallbacks_total", "sent")
	shedMetric, _ := counter(t, reg, "apollo_redis_read_fallbacks_total", "shed")
	t.Logf("served %d, shed %d; fallbacks sent %v, shed %v", served, shed, sent, shedMetric)
	if sent == 0 || shedMetric == 0 {
		t.Errorf("fallback metrics sent=%v shed=%v, want both > 0", sent, shedMetric)
	}
	for _, name := range []string{"apollo_redis_node_ejections_total", "apollo_redis_node_latency_seconds", "apollo_redis_commands_total", "apollo_redis_topology_refreshes_total"} {
		if _, n := counter(t, reg, name, ""); n == 0 {
			t.Errorf("metric %s has no series", name)
		}
	}
}

// counter sums the series of a counter (or gauge) family that carry
// labelValue ("" = all).
func counter(t testing.TB, reg *prometheus.Registry, name, labelValue string) (sum float64, series int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			match := labelValue == ""
			for _, l := range m.Label {
				match = match || l.GetValue() == labelValue
			}
			if match {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				series++
			}
		}
	}
	return sum, series
}

func TestACLUserAuthenticates(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.User, cfg.Password = "apollo", "s3cret"
	})
	ctx := ctxFor(t, 20*time.Second)
	r := newRouter(t, c)
	if err := r.Do(ctx, redisroute.Write("SET", "k", "v")).Err; err != nil {
		t.Fatalf("SET as ACL user: %v", err)
	}
	cfg := redisroute.DefaultConfig()
	cfg.Addrs, cfg.Username, cfg.Password = c.Addrs()[:1], "apollo", "wrong"
	if _, err := redisroute.New(ctx, cfg, nil, nil); err == nil || !strings.Contains(fmt.Sprint(err), "WRONGPASS") {
		t.Errorf("New with a wrong password = %v, want WRONGPASS", err)
	}
}
