package redisroute_test

import (
	"context"
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

func newRouter(t testing.TB, c *localcluster.Cluster, edit ...func(*redisroute.Config)) *redisroute.Router {
	t.Helper()
	return newRouterOn(t, c, prometheus.NewRegistry(), edit...)
}

// newRouterOn is newRouter with its metrics on reg.
func newRouterOn(t testing.TB, c *localcluster.Cluster, reg *prometheus.Registry, edit ...func(*redisroute.Config)) *redisroute.Router {
	t.Helper()
	cfg := redisroute.DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	cfg.Username, cfg.Password = c.Config().User, c.Config().Password
	for _, e := range edit {
		e(&cfg)
	}
	r, err := redisroute.New(context.Background(), cfg, reg, nil)
	if err != nil {
		t.Fatalf("redisroute.New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestPipelineReadsYourWritesOnEveryPolicy(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	w := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary })
	var writes []redisroute.Cmd
	for i := 0; i < 100; i++ {
		writes = append(writes, redisroute.Write("HSET", fmt.Sprintf("d:{%d}", i), "status", "available", "n", i))
	}
	if err := w.Exec(ctx, writes).Err(); err != nil {
		t.Fatalf("writes: %v", err)
	}
	// Replicas acknowledge before we read from them.
	for s := 0; s < 3; s++ {
		cl := c.Primary(ctx, s).Client()
		cl.Do(ctx, "WAIT", 2, 1000)
		cl.Close()
	}
	for _, p := range redisroute.Policies() {
		t.Run(string(p), func(t *testing.T) {
			r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = p })
			var reads []redisroute.Cmd
			for i := 0; i < 100; i++ {
				reads = append(reads, redisroute.Read("HMGET", fmt.Sprintf("d:{%d}", i), "status", "n", "missing"))
			}
			reads = append(reads, redisroute.Read("GET", "absent-key"))
			res := r.Exec(ctx, reads)
			if err := res.Err(); err != nil {
				t.Fatalf("reads: %v", err)
			}
			nodes := map[string]bool{}
			for i, got := range res[:100] {
				want := fmt.Sprintf("[available %d <nil>]", i)
				if s := fmt.Sprint(got.Val); s != want {
					t.Fatalf("HMGET d:{%d} = %s, want %s", i, s, want)
				}
				nodes[got.Node] = true
			}
			if res[100].Val != nil || res[100].Err != nil {
				t.Errorf("GET of a missing key = %v, %v; want nil, nil", res[100].Val, res[100].Err)
			}
			if p != redisroute.Legacy2019 && len(nodes) != 3 {
				t.Errorf("one pipeline touched %d nodes, want 3 (one per shard)", len(nodes))
			}
			roles := map[string]string{}
			for _, n := range r.Nodes() {
				roles[n.Addr] = n.Role
			}
			for n := range nodes {
				want := "replica"
				if p == redisroute.Primary {
					want = "primary"
				}
				if p != redisroute.Nearest && roles[n] != want {
					t.Errorf("policy %s read from %s (%s), want a %s", p, n, roles[n], want)
				}
			}
		})
	}
}

func TestOneBadCommandDoesNotFailItsNeighbours(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ctx := ctxFor(t, 20*time.Second)
	r := newRouter(t, c)
	res := r.Exec(ctx, []redisroute.Cmd{
		redisroute.Write("SET", "a", "1"),
		redisroute.Write("HSET", "a", "f", "v"), // WRONGTYPE
		redisroute.Write("SET", "b", "2"),
		{Args: []any{"GET"}},                        // no key: rejected before sending
		redisroute.Write("NOSUCHCOMMAND", "c", "x"), // a Redis error reply
	})
	if res[0].Err != nil || res[2].Err != nil {
		t.Fatalf("neighbours failed: %v, %v", res[0].Err, res[2].Err)
	}
	if res[1].Err == nil || !strings.Contains(res[1].Err.Error(), "WRONGTYPE") {
		t.Errorf("HSET on a string = %v, want WRONGTYPE", res[1].Err)
	}
	if !errors.Is(res[3].Err, redisroute.ErrInvalidCommand) {
		t.Errorf("command without key = %v, want ErrInvalidCommand", res[3].Err)
	}
	if res[4].Err == nil {
		t.Errorf("unknown command succeeded")
	}
	var pe *redisroute.PipelineError
	if err := res.Err(); !errors.As(err, &pe) || pe.Failed != 3 || pe.Index != 1 {
		t.Errorf("Results.Err() = %v, want a PipelineError with 3 failures, first at 1", err)
	}
}

func TestNewRejectsBadConfigAndUnreachableSeeds(t *testing.T) {
	cfg := redisroute.DefaultConfig()
	if _, err := redisroute.New(context.Background(), cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "seed address") {
		t.Errorf("New without addrs = %v, want a seed address error", err)
	}
	cfg.Addrs = []string{"127.0.0.1:1"}
	ctx := ctxFor(t, 5*time.Second)
	if _, err := redisroute.New(ctx, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "CLUSTER SLOTS") {
		t.Errorf("New with an unreachable seed = %v, want a connect error", err)
	}
}
