package redisroute_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

const seededKeys = 10000

// seed writes seededKeys driver-like hashes and waits until every replica has them.
func seed(t testing.TB, c *localcluster.Cluster) []string {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary; cfg.CallTimeout = 10 * time.Second })
	keys := make([]string, seededKeys)
	var batch []redisroute.Cmd
	for i := range keys {
		keys[i] = fmt.Sprintf("driver:%d", i)
		batch = append(batch, redisroute.Write("HSET", keys[i], "status", "available", "lat", "1.3", "lng", "103.8"))
		if len(batch) == 500 || i == len(keys)-1 {
			if err := r.Exec(ctx, batch).Err(); err != nil {
				t.Fatalf("seed: %v", err)
			}
			batch = batch[:0]
		}
	}
	for s := 0; s < c.Config().Primaries; s++ {
		cl := c.Primary(ctx, s).Client()
		n, err := cl.Do(ctx, "WAIT", c.Config().Replicas, 5000).Int()
		cl.Close()
		if err != nil || n != c.Config().Replicas {
			t.Fatalf("WAIT on shard %d = %d, %v", s, n, err)
		}
	}
	r.Close()
	return keys
}

func apolloReader(r *redisroute.Router) drill.Reader {
	return func(ctx context.Context, keys []string) int {
		return r.Exec(ctx, hmgets(keys)).OK()
	}
}

// hmgets is the drill's call: each driver's status and position.
func hmgets(keys []string) []redisroute.Cmd {
	cmds := make([]redisroute.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = redisroute.Read("HMGET", k, "status", "lat", "lng")
	}
	return cmds
}

// goRedisReader is today's library as users configure it for replica reads.
func goRedisReader(cc *redis.ClusterClient) drill.Reader {
	return func(ctx context.Context, keys []string) int {
		cmds, _ := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.HMGet(ctx, k, "status", "lat", "lng")
			}
			return nil
		})
		ok := 0
		for _, c := range cmds {
			if c.Err() == nil {
				ok++
			}
		}
		return ok
	}
}

func newGoRedis(c *localcluster.Cluster) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()[:1], ReadOnly: true})
}

// replicaFault crashes (SIGKILL) or hangs (SIGSTOP) a replica of shard 0,
// and heals it by restarting or resuming it, then waits for a healthy cluster.
func replicaFault(c *localcluster.Cluster, hang bool) drill.Fault {
	n := c.Replicas(context.Background(), 0)[0]
	if hang {
		return drill.FaultFunc{Label: "pause " + n.Addr, InjectFn: func(context.Context) error { return n.Pause() },
			HealFn: func(ctx context.Context) error {
				if err := n.Resume(); err != nil {
					return err
				}
				return c.WaitHealthy(ctx)
			}}
	}
	return drill.FaultFunc{Label: "kill " + n.Addr, InjectFn: func(context.Context) error { return n.Kill() },
		HealFn: func(ctx context.Context) error {
			if err := n.Restart(ctx); err != nil {
				return err
			}
			return c.WaitHealthy(ctx)
		}}
}

type contender struct {
	name string
	open func() (drill.Reader, func())
}

// compare runs the same load and the same fault against each contender in
// turn, healing the cluster in between, and prints the figures side by side.
func compare(t *testing.T, c *localcluster.Cluster, keys []string, hang bool, plan drill.Plan, cs []contender) map[string]drill.Report {
	t.Helper()
	out := map[string]drill.Report{}
	var reps []drill.Report
	for _, ct := range cs {
		if err := c.WaitHealthy(ctxFor(t, 60*time.Second)); err != nil {
			t.Fatal(err)
		}
		read, closeFn := ct.open()
		var timeline strings.Builder
		rep, err := drill.RunLoad(context.Background(), plan, keys, read, replicaFault(c, hang), func(s drill.Second) {
			drill.WriteSecond(&timeline, ct.name, s)
		})
		t.Logf("timeline:\n%s", timeline.String())
		closeFn()
		if err != nil {
			t.Fatalf("%s: %v", ct.name, err)
		}
		rep.Name = ct.name
		out[ct.name] = rep
		reps = append(reps, rep)
	}
	var b strings.Builder
	drill.WriteTable(&b, reps)
	t.Logf("%s, %d workers × pipelines of %d HMGET, fault at %s of %s:\n%s", reps[0].Fault, plan.Workers, plan.Pipeline, plan.FaultAt, plan.Duration, b.String())
	return out
}

func contenders(t *testing.T, c *localcluster.Cluster, names ...string) []contender {
	all := map[string]contender{
		"apollo replica-preferred": {"apollo replica-preferred", func() (drill.Reader, func()) {
			r := newRouter(t, c)
			return apolloReader(r), func() { r.Close() }
		}},
		"go-redis v9 ReadOnly": {"go-redis v9 ReadOnly", func() (drill.Reader, func()) {
			cc := newGoRedis(c)
			return goRedisReader(cc), func() { cc.Close() }
		}},
		"legacy-2019": {"legacy-2019", func() (drill.Reader, func()) {
			r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Legacy2019; cfg.ReadTimeout = 3 * time.Second })
			return apolloReader(r), func() { r.Close() }
		}},
	}
	var out []contender
	for _, n := range names {
		out = append(out, all[n])
	}
	return out
}

var resiliencePlan = drill.Plan{Workers: 16, Pipeline: 20, Duration: 9 * time.Second, FaultAt: 2 * time.Second, CallTimeout: 5 * time.Second}

// TestReplicaCrashAndHangLoseNoCommand is the 2019 incident: under
// concurrent pipelines of 20 HMGET, one replica crashes, or hangs for longer
// than the node timeout. Apollo must answer every command; go-redis v9 is
// measured beside it.
func TestReplicaCrashAndHangLoseNoCommand(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 2 * time.Second })
	keys := seed(t, c)
	for _, hang := range []bool{false, true} {
		name := map[bool]string{false: "crash", true: "hang"}[hang]
		t.Run(name, func(t *testing.T) {
			reps := compare(t, c, keys, hang, resiliencePlan, contenders(t, c, "apollo replica-preferred", "go-redis v9 ReadOnly"))
			a := reps["apollo replica-preferred"]
			if a.OKCommands != a.Commands || a.Calls == 0 {
				t.Errorf("apollo: %d of %d commands succeeded, want all", a.OKCommands, a.Commands)
			}
		})
	}
}

// TestLegacy2019ReproducesTheIncident checks that the drill's baseline is
// faithful: with a crashed replica most calls fail until the 60 s refresh.
func TestLegacy2019ReproducesTheIncident(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 2 * time.Second })
	keys := seed(t, c)
	plan := resiliencePlan
	plan.Duration = 7 * time.Second
	reps := compare(t, c, keys, false, plan, contenders(t, c, "legacy-2019"))
	l := reps["legacy-2019"]
	for _, s := range l.PerSecond {
		if s.Fault && s.T > 2 && s.SuccessRatio() > 0.5 {
			t.Errorf("legacy-2019 second %d: %.1f%% of calls succeeded, want the incident (< 50%%)", s.T, 100*s.SuccessRatio())
		}
	}
	if l.PreFaultCallsPerS == 0 || l.PerSecond[0].SuccessRatio() < 0.99 {
		t.Errorf("legacy-2019 failed before the fault: %+v", l.PerSecond[0])
	}
}

// TestPrimaryPolicySurvivesAHungPrimary: with reads on primaries, a hung
// primary is left for its replicas once it is found silent (not hedged to a
// replica before that, which could answer "missing" during a migration).
func TestPrimaryPolicySurvivesAHungPrimary(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.NodeTimeout = 2 * time.Second
		cfg.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
	})
	keys := seed(t, c)
	r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary; cfg.CallTimeout = 5 * time.Second })
	primary := c.Primary(context.Background(), 0)
	fault := drill.Hang(c, "primary", primary)
	plan := drill.Plan{Workers: 8, Pipeline: 20, Duration: 8 * time.Second, FaultAt: 2 * time.Second, CallTimeout: 5 * time.Second}
	rep, err := drill.RunLoad(context.Background(), plan, keys, apolloReader(r), fault, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("primary policy, hung primary: %d calls, %.3f%% ok, p99 %.1f ms, max %.1f ms", rep.Calls, 100*rep.CallSuccessRatio, rep.P99Ms, rep.MaxMs)
	if rep.OKCommands != rep.Commands {
		t.Errorf("%d of %d commands failed", rep.Commands-rep.OKCommands, rep.Commands)
	}
}
