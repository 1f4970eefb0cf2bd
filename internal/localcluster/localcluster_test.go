package localcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// keyOnShard finds a key whose slot is owned by the given shard.
func keyOnShard(t *testing.T, ctx context.Context, c *localcluster.Cluster, shard int) string {
	cl := c.Nodes()[0].Client()
	defer cl.Close()
	p := c.Config().Primaries
	for i := 0; i < 10000; i++ {
		k := "k" + strconv.Itoa(i)
		slot, err := cl.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(slot)*p/16384 == shard {
			return k
		}
	}
	t.Fatalf("no key found for shard %d", shard)
	return ""
}

func TestStartDefaultShapeReplicatesEveryShard(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 30*time.Second)

	infos, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(infos), 9; got != want {
		t.Fatalf("nodes = %d, want %d", got, want)
	}
	roles := map[int][]string{}
	for _, in := range infos {
		roles[in.Shard] = append(roles[in.Shard], in.Role)
		if in.PID == 0 || in.State != localcluster.Running {
			t.Errorf("node %s: pid %d state %s, want a running process", in.Addr, in.PID, in.State)
		}
	}
	counts, err := c.SlotCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for shard := 0; shard < 3; shard++ {
		n := counts[c.Primary(ctx, shard)]
		if n < 5461 {
			t.Errorf("shard %d primary serves %d slots, want a third of 16384", shard, n)
		}
		total += n
	}
	if len(counts) != 3 || total != 16384 {
		t.Errorf("slot counts %v: %d primaries serve %d slots, want 3 serving 16384", counts, len(counts), total)
	}
	for shard := 0; shard < 3; shard++ {
		if got, want := strings.Join(roles[shard], ","), "primary,replica,replica"; got != want {
			t.Errorf("shard %d roles = %s, want %s", shard, got, want)
		}
		key := keyOnShard(t, ctx, c, shard)
		primary := c.Primary(ctx, shard).Client()
		if err := primary.Set(ctx, key, "v"+key, 0).Err(); err != nil {
			t.Fatalf("SET on shard %d primary: %v", shard, err)
		}
		if n, err := primary.Do(ctx, "WAIT", 2, 2000).Int(); err != nil || n != 2 {
			t.Fatalf("WAIT = %d, %v; want both replicas to acknowledge", n, err)
		}
		primary.Close()
		for _, r := range c.Replicas(ctx, shard) {
			got := readOnReplica(t, ctx, r, key)
			if got != "v"+key {
				t.Errorf("GET %s on replica %s = %q, want %q", key, r.Addr, got, "v"+key)
			}
		}
	}
}

func readOnReplica(t *testing.T, ctx context.Context, n *localcluster.Node, key string) string {
	t.Helper()
	cl := n.Client()
	defer cl.Close()
	var get *redis.StringCmd
	_, err := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ReadOnly(ctx)
		get = p.Get(ctx, key)
		return nil
	})
	if err != nil && err != redis.Nil {
		t.Fatalf("READONLY GET on %s: %v", n.Addr, err)
	}
	return get.Val() // "" for a missing key
}

func TestFaultsKillRestartPauseResume(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 2 * time.Second })
	ctx := ctxFor(t, 90*time.Second)
	replica := c.Replicas(ctx, 1)[0]
	id, oldPID := replica.ID(), replica.PID()

	t.Run("Kill refuses connections and the cluster flags the node fail", func(t *testing.T) {
		if err := replica.Kill(); err != nil {
			t.Fatal(err)
		}
		if replica.PID() != 0 || processExists(oldPID) {
			t.Fatalf("process %d still exists after Kill", oldPID)
		}
		cl := replica.Client()
		defer cl.Close()
		if err := cl.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("PING after Kill = %v, want connection refused", err)
		}
		if err := c.WaitFlagged(ctx, replica, "fail"); err != nil {
			t.Fatal(err)
		}
		assertClusterOK(t, ctx, c.Primary(ctx, 0))
	})

	t.Run("Restart rejoins with the same identity", func(t *testing.T) {
		if err := replica.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
		if replica.ID() != id || replica.PID() == oldPID {
			t.Fatalf("after Restart id=%s pid=%d, want id %s and a new pid", replica.ID(), replica.PID(), id)
		}
		if err := c.WaitRole(ctx, replica, "replica"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Pause hangs the node and Resume ends it", func(t *testing.T) {
		if err := replica.Pause(); err != nil {
			t.Fatal(err)
		}
		cl := replica.Client()
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := cl.Ping(pctx).Err()
		cancel()
		if err == nil || strings.Contains(err.Error(), "refused") {
			t.Fatalf("PING to a paused node = %v, want a timeout", err)
		}
		if err := c.WaitFlagged(ctx, replica, "fail"); err != nil {
			t.Fatal(err)
		}
		if err := replica.Resume(); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after Resume: %v", err)
		}
	})
}

func TestKillingAPrimaryPromotesItsReplica(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 2 * time.Second })
	ctx := ctxFor(t, 60*time.Second)
	primary := c.Primary(ctx, 2)
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	err := waitUntil(ctx, func() bool {
		p := c.Primary(ctx, 2)
		return p != nil && p != primary
	})
	if err != nil {
		t.Fatalf("no replica of shard 2 was promoted: %v", err)
	}
	assertClusterOK(t, ctx, c.Primary(ctx, 2))
	if err := primary.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRole(ctx, primary, "replica"); err != nil {
		t.Fatalf("old primary did not rejoin as a replica: %v", err)
	}
}

func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func assertClusterOK(t *testing.T, ctx context.Context, n *localcluster.Node) {
	t.Helper()
	cl := n.Client()
	defer cl.Close()
	err := waitUntil(ctx, func() bool {
		s, err := cl.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(s, "cluster_state:ok")
	})
	if err != nil {
		t.Fatalf("cluster_state on %s never ok: %v", n.Addr, err)
	}
}

func processExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

func TestCloseLeavesNoProcessOrDirectory(t *testing.T) {
	cfg := localcluster.DefaultConfig()
	cfg.Primaries, cfg.Replicas = 1, 1
	cfg.Dir = t.TempDir()
	c, err := localcluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range c.Nodes() {
		pids = append(pids, n.PID())
	}
	c.Nodes()[1].Pause() // a hung process must be stopped too
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if processExists(pid) {
			t.Errorf("process %d still exists after Close", pid)
		}
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still exists after Close (stat: %v)", c.Dir(), err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestAuthenticatedClusterWithACLUser(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.User, cfg.Password = "apollo", "s3cret"
	})
	ctx := ctxFor(t, 20*time.Second)
	anon := redis.NewClient(&redis.Options{Addr: c.Nodes()[0].Addr, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without credentials = %v, want NOAUTH", err)
	}
	user := redis.NewClient(&redis.Options{Addr: c.Nodes()[0].Addr, Username: "apollo", Password: "s3cret"})
	defer user.Close()
	if err := user.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING as the ACL user: %v", err)
	}
}

func TestStartWithoutRedisServerSaysHowToInstall(t *testing.T) {
	cfg := localcluster.DefaultConfig()
	cfg.RedisServer = filepath.Join(t.TempDir(), "no-such-redis-server")
	_, err := localcluster.Start(context.Background(), cfg)
	if !errors.Is(err, localcluster.ErrRedisNotInstalled) {
		t.Fatalf("Start = %v, want ErrRedisNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("error %q does not say how to install redis-server", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*localcluster.Config)
		want string
	}{
		{"default", func(*localcluster.Config) {}, ""},
		{"no primaries", func(c *localcluster.Config) { c.Primaries = 0 }, "primaries"},
		{"negative replicas", func(c *localcluster.Config) { c.Replicas = -1 }, "replicas"},
		{"tiny node timeout", func(c *localcluster.Config) { c.NodeTimeout = time.Millisecond }, "node timeout"},
		{"user without password", func(c *localcluster.Config) { c.User = "u" }, "password"},
		{"password with space", func(c *localcluster.Config) { c.Password = "a b" }, "spaces"},
		{"multi-line extra arg", func(c *localcluster.Config) { c.ExtraArgs = []string{"a\nb"} }, "one line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := localcluster.DefaultConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestSlotCountSkipsOpenMigrations(t *testing.T) {
	for _, tc := range []struct {
		slots []string
		want  int
	}{
		{nil, 0},
		{[]string{"0-5460"}, 5461},
		{[]string{"7"}, 1},
		{[]string{"0-99", "200", "300-300"}, 102},
		{[]string{"0-99", "[100->-abc]", "[5-<-def]"}, 100},
		{[]string{"garbage", "9-3"}, 0},
	} {
		if got := (localcluster.NodeView{Slots: tc.slots}).SlotCount(); got != tc.want {
			t.Errorf("SlotCount(%q) = %d, want %d", tc.slots, got, tc.want)
		}
	}
}

// A fault heals to the layout the cluster was made with: when a shard's
// replicas are all down for a while, no replica of another shard moves
// to it (Redis's replica migration, on by default). With it on, the
// shard got a replica from a shard of two, and once its own came back
// it had three and the other one: never healthy again, which is how a
// verify run of every fault ended, waiting.
func TestAShardLeftWithoutReplicasTakesNoneFromTheOthers(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas, cfg.NodeTimeout = 2, time.Second })
	ctx := ctxFor(t, 90*time.Second)
	down := c.Replicas(ctx, 0)
	if len(down) != 2 {
		t.Fatalf("shard 0 has %d replicas, want 2", len(down))
	}
	for _, n := range down {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	// Orphaned once the cluster marks both failed (node timeout); a
	// migration, when on, follows within a second or two of it.
	if err := waitUntil(ctx, func() bool {
		infos, err := c.Info(ctx)
		if err != nil {
			return false
		}
		failed := 0
		for _, in := range infos {
			for _, f := range in.Flags {
				if f == "fail" {
					failed++
				}
			}
		}
		return failed == 2
	}); err != nil {
		t.Fatalf("the killed replicas were never marked failed: %v", err)
	}
	time.Sleep(5 * time.Second)
	for _, n := range down {
		if err := n.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		t.Fatalf("the cluster did not heal to its layout: %v", err)
	}
}
