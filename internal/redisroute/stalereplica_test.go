package redisroute_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A replica whose replication link is cut keeps answering reads with what
// it had; the primary and the other replica move on. Once the router's
// replication check has seen it, no read is answered by it; once the link
// is back and it has caught up, it serves reads again. A router that
// starts while the link is down reads nothing from it from the start.
func TestAReplicaWithItsLinkDownServesNoReadsUntilItCatchesUp(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 90*time.Second)
	const key = "lag:k"
	write := primaryWriter(t, ctx, c, key)
	write("v1", 2) // both replicas have v1

	// The router runs before the fault, as in production.
	r := newRouter(t, c)
	bad := c.Replicas(ctx, shardOfKey(t, ctx, c, key))[0]
	admin := bad.Client()
	t.Cleanup(func() { admin.Close() })
	// The replica fails to authenticate to its primary from now on: its
	// link stays down while the primary keeps taking writes.
	for _, kv := range [][2]string{{"masteruser", "nosuch"}, {"masterauth", "x"}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { restoreLink(context.Background(), admin) })
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Err(); err != nil {
		t.Fatal(err)
	}
	waitLink(t, ctx, admin, "down")
	write("v2", 1) // the other replica has v2
	if v, err := readOnly(ctx, bad, key); err != nil || v != "v1" {
		t.Fatalf("the cut replica reads %q, %v; want v1 (the test needs a stale replica)", v, err)
	}

	waitBehind(t, r, bad.Addr, true)
	stale, fromBad := readMany(t, ctx, r, key, bad.Addr)
	if stale != 0 || fromBad != 0 {
		t.Errorf("link down: %d stale reads, %d served by %s; want none", stale, fromBad, bad.Addr)
	}
	// An instance that starts now reads none from it either, from its
	// first call (the cluster still lists the replica), and reads from the
	// other replica from its first call too: it judged both before its
	// first call.
	late := newRouter(t, c)
	var good *localcluster.Node
	for _, x := range c.Replicas(ctx, shardOfKey(t, ctx, c, key)) {
		if x != bad {
			good = x
		}
	}
	stale, fromGood := readMany(t, ctx, late, key, good.Addr)
	stale2, fromBad := readMany(t, ctx, late, key, bad.Addr)
	if stale+stale2 != 0 || fromBad != 0 || fromGood == 0 {
		t.Errorf("link down, router started since: %d stale reads, %d served by %s, %d by the other replica; want none stale, none from it, some from the other", stale+stale2, fromBad, bad.Addr, fromGood)
	}

	restoreLink(ctx, admin)
	waitLink(t, ctx, admin, "up")
	waitBehind(t, r, bad.Addr, false)
	stale, fromBad = readMany(t, ctx, r, key, bad.Addr)
	if stale != 0 || fromBad == 0 {
		t.Errorf("link restored: %d stale reads, %d served by %s; want none stale and some from it", stale, fromBad, bad.Addr)
	}
}

// readMany reads key 200 times one command at a time and in 20 pipelines
// of 10, and counts the answers that are not v2 and those served by addr.
func readMany(t *testing.T, ctx context.Context, r *redisroute.Router, key, addr string) (stale, fromAddr int) {
	t.Helper()
	var tally readTally
	for i := 0; i < 200; i++ {
		tally.add(t, r.Exec(ctx, gets(key, 1)), addr)
	}
	for i := 0; i < 20; i++ {
		tally.add(t, r.Exec(ctx, gets(key, 10)), addr)
	}
	return tally.stale, tally.fromAddr
}

// readTally counts the answers to GETs that are not v2, and those served
// by one node; a failed GET fails the test.
type readTally struct{ stale, fromAddr int }

func (c *readTally) add(t *testing.T, res redisroute.Results, addr string) {
	t.Helper()
	for _, x := range res {
		if x.Err != nil {
			t.Fatalf("GET: %v", x.Err)
		}
		if x.Val != "v2" {
			c.stale++
		}
		if x.Node == addr {
			c.fromAddr++
		}
	}
}

// gets is n GETs of key.
func gets(key string, n int) []redisroute.Cmd {
	cmds := make([]redisroute.Cmd, n)
	for k := range cmds {
		cmds[k] = redisroute.Read("GET", key)
	}
	return cmds
}

// primaryWriter returns a function that sets key on its primary, with
// acks replica acknowledgements, or fails the test.
func primaryWriter(t *testing.T, ctx context.Context, c *localcluster.Cluster, key string) func(val string, acks int) {
	w := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary })
	return func(val string, acks int) {
		t.Helper()
		cmd := redisroute.Write("SET", key, val)
		cmd.Acks = acks
		if res := w.Do(ctx, cmd); res.Err != nil {
			t.Fatalf("SET %s %s: %v", key, val, res.Err)
		}
	}
}

// shardOfKey is the shard whose primary owns key: the others answer MOVED.
func shardOfKey(t *testing.T, ctx context.Context, c *localcluster.Cluster, key string) int {
	t.Helper()
	for s := 0; s < c.Config().Primaries; s++ {
		cl := c.Primary(ctx, s).Client()
		err := cl.Get(ctx, key).Err()
		cl.Close()
		if err == nil || err == redis.Nil {
			return s
		}
	}
	t.Fatalf("no primary owns %s", key)
	return -1
}

func readOnly(ctx context.Context, n *localcluster.Node, key string) (string, error) {
	cl := n.Client()
	defer cl.Close()
	conn := cl.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		return "", err
	}
	return conn.Get(ctx, key).Result()
}

func restoreLink(ctx context.Context, admin *redis.Client) {
	admin.ConfigSet(ctx, "masteruser", "")
	admin.ConfigSet(ctx, "masterauth", "")
}

// waitLink waits until the replica reports master_link_status:want.
func waitLink(t *testing.T, ctx context.Context, admin *redis.Client, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := admin.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:"+want+"\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replication link not %s after 20s: %v\n%s", want, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitBehind waits until the router reports addr as behind (or not).
func waitBehind(t *testing.T, r *redisroute.Router, addr string, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, n := range r.Nodes() {
			if n.Addr == addr && n.Behind == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: behind is not %v after 5s: %+v", addr, want, fmt.Sprint(r.Nodes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
