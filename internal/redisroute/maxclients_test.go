package redisroute_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A primary at its maxclients (another application's connections filled
// it) refuses every new connection, and still serves the ones Apollo has.
// A write that needed a new connection never ran: it is sent again, and is
// never reported as of unknown outcome. Until 2026-12-05 go-redis's report
// of such a connection (a broken pipe or a reset, the refusal itself lost)
// read as a write sent and unanswered: with 64 writers on a full primary
// whose pool had grown for 8, about a fifth of the writes failed as
// unknown.
func TestAWriteThatNeededANewConnectionToAFullPrimaryIsSentAgain(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 60*time.Second)
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg, func(cfg *redisroute.Config) { cfg.MemoryCheckInterval = 50 * time.Millisecond })
	p := c.Primary(ctx, 0)
	keys := keysOnPrimary(t, r, p.Addr, 500)

	var ok, unknown, failed atomic.Int64
	var firstFailure atomic.Value
	write := func(stop <-chan struct{}, w int) {
		for i := w; ; i += 64 {
			select {
			case <-stop:
				return
			default:
			}
			res := r.Do(ctx, redisroute.Write("HSET", keys[i%len(keys)], "seen", i))
			switch {
			case res.Err == nil:
				ok.Add(1)
			case errors.Is(res.Err, redisroute.ErrAmbiguous):
				unknown.Add(1)
				firstFailure.CompareAndSwap(nil, res.Err.Error())
			default:
				failed.Add(1)
				firstFailure.CompareAndSwap(nil, res.Err.Error())
			}
		}
	}
	run := func(writers int, d time.Duration) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() { defer wg.Done(); write(stop, w) }()
		}
		time.Sleep(d)
		close(stop)
		wg.Wait()
	}
	run(8, time.Second) // the pool grows to what 8 writers need

	cl := p.Client()
	defer cl.Close()
	admin := cl.Conn()
	defer admin.Close()
	info, err := admin.Info(ctx, "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	connected := localcluster.InfoField(info, "connected_clients")
	if err := admin.ConfigSet(ctx, "maxclients", fmt.Sprint(connected)).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.ConfigSet(ctx, "maxclients", "10000").Err() })
	// The memory check's gauges say the node has no room for a connection.
	waitMetric(t, reg, "apollo_redis_node_maxclients", p.Addr, func(v float64) bool { return v == float64(connected) })
	if clients, _ := counter(t, reg, "apollo_redis_node_clients", p.Addr); clients < float64(connected) {
		t.Errorf("apollo_redis_node_clients of the full primary = %v, want at least its maxclients %d", clients, connected)
	}
	ok.Store(0)
	run(64, 3*time.Second) // it would grow to what 64 need: every dial is refused

	full, _ := counter(t, reg, "apollo_redis_node_errors_total", "full")
	t.Logf("full primary (maxclients %d): %d writes done, %d unknown, %d failed (%v); %v connections refused", connected, ok.Load(), unknown.Load(), failed.Load(), firstFailure.Load(), full)
	if full == 0 {
		t.Fatalf("no connection was refused: the test did not fill the primary")
	}
	if unknown.Load() != 0 {
		t.Errorf("%d writes reported as of unknown outcome, though each needed a connection the full primary refused (nothing ran); want 0", unknown.Load())
	}
	if ok.Load() == 0 {
		t.Errorf("no write done on the full primary's open connections")
	}
}

// keysOnPrimary returns n keys written through r to the node at addr.
func keysOnPrimary(t *testing.T, r *redisroute.Router, addr string, n int) []string {
	t.Helper()
	var cmds []redisroute.Cmd
	for i := range 4 * n {
		cmds = append(cmds, redisroute.Write("HSET", fmt.Sprintf("full:%d", i), "seen", 0))
	}
	var keys []string
	for i, res := range r.Exec(ctxFor(t, 30*time.Second), cmds) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Node == addr && len(keys) < n {
			keys = append(keys, cmds[i].Key)
		}
	}
	if len(keys) < n {
		t.Fatalf("%d keys of %d on %s", len(keys), n, addr)
	}
	return keys
}

// A replica at its maxclients cannot be asked whether it holds a write:
// the write proof counts it as one that takes no connection (down), as
// before the set-up errors were marked, rather than fail a write for it.
func TestWritesProvenWhileAReplicaIsFullAreDone(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 60*time.Second)
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg)
	p := c.Primary(ctx, 0)
	keys := keysOnPrimary(t, r, p.Addr, 50)
	write := func(i int) error {
		cmd := redisroute.Write("HSET", keys[i%len(keys)], "seen", i)
		cmd.Acks = 1
		return r.Do(ctx, cmd).Err
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the proof's connections idle: FillClients closes them
	for _, rep := range c.Replicas(ctx, 0) {
		if err := rep.FillClients(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rep.UnfillClients(context.Background()) })
	}
	for i := 1; i <= 200; i++ {
		if err := write(i); err != nil {
			t.Errorf("write %d while its shard's replicas are full: %v", i, err)
		}
	}
	asked, _ := counter(t, reg, "apollo_redis_write_proof_replicas_total", "")
	t.Logf("write proof verdicts: %v", asked)
}
