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

// A primary at its maxmemory refuses writes (OOM), but what it holds can
// still be read, confirmed: a confirmed read's fence is a write, and it
// must not be one that a full node refuses, or every booking read of the
// shard fails while its data sits there.
func TestAConfirmedReadOfAFullPrimaryIsStillConfirmed(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	r := newRouterOn(t, c, prometheus.NewRegistry())
	ctx := ctxFor(t, 30*time.Second)
	const key = "apollo:test:{full}"
	confirmed := func() redisroute.Result {
		return r.Exec(ctx, []redisroute.Cmd{{Args: []any{"GET", key}, Key: key, Fresh: true, Acks: 1}})[0]
	}
	if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", key, "held")}).Err(); err != nil {
		t.Fatal(err)
	}
	if res := confirmed(); res.Err != nil || res.Val != "held" {
		t.Fatalf("confirmed read with room: %v, %v", res.Val, res.Err)
	}
	primary := c.Primary(ctx, 0)
	admin := primary.Client()
	defer admin.Close()
	t.Cleanup(func() {
		admin := primary.Client()
		defer admin.Close()
		admin.ConfigSet(context.Background(), "maxmemory", "0")
	})
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", key, "more")}).Err(); err == nil {
		t.Fatal("a write to a primary at maxmemory 1 went through: the node is not full")
	}
	for range 3 {
		if res := confirmed(); res.Err != nil || res.Val != "held" {
			t.Fatalf("confirmed read of a full primary: %v, %v; want the value, confirmed", res.Val, res.Err)
		}
	}
}
