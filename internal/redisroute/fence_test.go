package redisroute_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A primary at its maxmemory refuses writes (OOM), but what it holds can
// still be read, confirmed: a confirmed read's fence is a write, and once
// the node has refused one for memory the fence is one a full node takes
// (fence.go); when the node has room again, fences are plain SETs again.
func TestAConfirmedReadOfAFullPrimaryIsStillConfirmed(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	r := newRouterOn(t, c, prometheus.NewRegistry(), func(cfg *redisroute.Config) { cfg.MemoryCheckInterval = 50 * time.Millisecond })
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
	calls := func(cmd string) int64 {
		info, err := admin.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		_, rest, found := strings.Cut(info, "cmdstat_"+cmd+":calls=")
		if !found {
			return 0
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		return n
	}

	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	// The first refusal the router meets marks the node: here the fence's
	// own, so that read fails, unconfirmed (a 503).
	if res := confirmed(); !errors.Is(res.Err, redisroute.ErrReadUnconfirmed) {
		t.Fatalf("the first confirmed read of a node just filled: %v, %v; want it unconfirmed (its SET fence refused)", res.Val, res.Err)
	}
	if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", key, "more")}).Err(); err == nil {
		t.Fatal("a write to a primary at maxmemory 1 went through: the node is not full")
	}
	for range 3 {
		if res := confirmed(); res.Err != nil || res.Val != "held" {
			t.Fatalf("confirmed read of a full primary: %v, %v; want the value, confirmed", res.Val, res.Err)
		}
	}
	if n := calls("eval"); n != 3 {
		t.Errorf("%d EVALs on the full primary, want a script fence for each of the 3 confirmed reads", n)
	}

	if err := admin.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for evals := calls("eval"); ; evals = calls("eval") {
		if res := confirmed(); res.Err != nil || res.Val != "held" {
			t.Fatalf("confirmed read with room again: %v, %v", res.Val, res.Err)
		}
		if calls("eval") == evals {
			break // a plain SET fence again
		}
		if time.Now().After(deadline) {
			t.Fatal("fences are still scripts 10 s after the node had room again")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
