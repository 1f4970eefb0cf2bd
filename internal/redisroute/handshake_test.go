package redisroute_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A replica that is up and answers, yet serves nothing, is a failed node:
// every read is still answered, with the right value, by the other nodes
// of its shard; the node is ejected, and re-admitted once it serves
// again. Two such replicas: one that starts refusing Apollo's connections
// (a password Apollo does not know, as in a half-done rotation), and one
// busy with a script that does not end (another application's, sharing
// the cluster), which answers every command at once with BUSY. The busy
// one failed reads until 2026-12-04: its BUSY was taken for the read's
// answer.
func TestAReplicaThatAnswersButServesNothingIsEjectedAndReadmitted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fail, serve func(t *testing.T, ctx context.Context, n *localcluster.Node)
	}{
		{"refusing its handshake", refuseHandshake, acceptHandshake},
		{"busy with a script", func(t *testing.T, ctx context.Context, n *localcluster.Node) {
			if err := n.Busy(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Unbusy(context.Background()) })
		}, func(t *testing.T, ctx context.Context, n *localcluster.Node) {
			if err := n.Unbusy(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t)
			keys := seed(t, c)[:200]
			ctx := ctxFor(t, 60*time.Second)
			r := newRouter(t, c)
			cmds := make([]redisroute.Cmd, len(keys))
			for i, k := range keys {
				cmds[i] = redisroute.Read("HMGET", k, "status")
			}
			read := func(round string) {
				t.Helper()
				for i := 0; i < 50; i++ {
					for k, x := range r.Exec(ctx, cmds) {
						if x.Err != nil || fmt.Sprint(x.Val) != "[available]" {
							t.Fatalf("%s, read %d, %s: %v, %v (from %s); want [available]", round, i, keys[k], x.Val, x.Err, x.Node)
						}
					}
				}
			}
			read("before the fault")

			bad := c.Replicas(ctx, 0)[0]
			tc.fail(t, ctx, bad)
			read("during the fault")
			if healthy(r, bad.Addr) {
				t.Fatalf("%s serves nothing but is not ejected", bad.Addr)
			}

			tc.serve(t, ctx, bad)
			deadline := time.Now().Add(10 * time.Second)
			for !healthy(r, bad.Addr) {
				if time.Now().After(deadline) {
					t.Fatalf("%s serves again but was not re-admitted", bad.Addr)
				}
				time.Sleep(50 * time.Millisecond)
			}
			read("after re-admission")
		})
	}
}

// refuseHandshake has n require a password Apollo does not know and
// closes Apollo's pooled connections, which were authenticated before.
func refuseHandshake(t *testing.T, ctx context.Context, n *localcluster.Node) {
	admin := n.Client()
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "requirepass", "not-apollos").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Err(); err != nil {
		t.Logf("client kill: %v", err) // it kills its own connection too
	}
	t.Cleanup(func() { _ = clearPassword(context.Background(), n) })
}

// acceptHandshake undoes refuseHandshake.
func acceptHandshake(t *testing.T, ctx context.Context, n *localcluster.Node) {
	if err := clearPassword(ctx, n); err != nil {
		t.Fatal(err)
	}
}

func clearPassword(ctx context.Context, n *localcluster.Node) error {
	restore := redis.NewClient(&redis.Options{Addr: n.Addr, Password: "not-apollos"})
	defer restore.Close()
	return restore.ConfigSet(ctx, "requirepass", "").Err()
}

func healthy(r *redisroute.Router, addr string) bool {
	for _, n := range r.Nodes() {
		if n.Addr == addr {
			return n.Healthy
		}
	}
	return false
}
