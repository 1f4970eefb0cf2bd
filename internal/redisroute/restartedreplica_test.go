package redisroute_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A replica that crashes and comes back after more writes than its
// primary's replication backlog holds has its last snapshot, or nothing,
// until its primary sends it the whole data set: with Redis's default
// repl-diskless-sync-delay of 5 s, for seconds. It answers PING at once,
// and reads too (replica-serve-stale-data), with what it has. No read may
// be answered by it before it has caught up: a driver's position would
// read as it was at the snapshot, a driver registered since as missing.
func TestARestartedReplicaServesNoReadsUntilItHasTheData(t *testing.T) {
	const key = "restart:k"
	c, ctx, set := snapshotCluster(t, key)
	r := newRouter(t, c)
	shard := shardOfKey(t, ctx, c, key)
	bad := c.Replicas(ctx, shard)[0]
	badAdmin := bad.Client()
	t.Cleanup(func() { badAdmin.Close() })
	fallBehindOnSnapshot(t, ctx, c, shard, bad)
	set("v2", 1)
	stale, fromBad := readFor(t, ctx, r, key, bad.Addr, time.Second)
	if stale != 0 || fromBad != 0 {
		t.Errorf("replica down: %d stale reads, %d served by %s; want none", stale, fromBad, bad.Addr)
	}
	restartWithOldData(t, ctx, bad, key)
	stale, fromBad = readFor(t, ctx, r, key, bad.Addr, 4*time.Second)
	if stale != 0 {
		t.Errorf("replica restarted, syncing: %d reads answered with old data (%d served by %s); want none", stale, fromBad, bad.Addr)
	}

	waitLink(t, ctx, badAdmin, "up")
	waitBehind(t, r, bad.Addr, false)
	stale, fromBad = readFor(t, ctx, r, key, bad.Addr, time.Second)
	if stale != 0 || fromBad == 0 {
		t.Errorf("replica caught up: %d stale reads, %d served by %s; want none stale and some from it", stale, fromBad, bad.Addr)
	}
}

// readFor reads key for d, one command a call and in pipelines of 10 in
// turn, and counts the answers that are not v2 and those served by addr.
func readFor(t *testing.T, ctx context.Context, r *redisroute.Router, key, addr string, d time.Duration) (stale, fromAddr int) {
	t.Helper()
	var tally readTally
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		tally.add(t, r.Exec(ctx, gets(key, 1+9*(i%2))), addr)
	}
	return tally.stale, tally.fromAddr
}

// A re-admitted replica is judged at once, not at the next periodic
// check: with checks an hour apart, a replica that restarted in step with
// its primary serves reads again soon after its probes re-admit it.
func TestAReadmittedReplicaIsJudgedAtOnce(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 60*time.Second)
	const key = "rejudge:k"
	primaryWriter(t, ctx, c, key)("v2", 2)
	r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.ReplicaCheckInterval = time.Hour })
	bad := c.Replicas(ctx, shardOfKey(t, ctx, c, key))[0]
	if err := bad.Kill(); err != nil {
		t.Fatal(err)
	}
	readFor(t, ctx, r, key, bad.Addr, 500*time.Millisecond) // finds it down: ejected
	if err := bad.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for give := time.Now().Add(20 * time.Second); ; {
		stale, fromBad := readFor(t, ctx, r, key, bad.Addr, 100*time.Millisecond)
		if stale != 0 {
			t.Fatalf("%d stale reads", stale)
		}
		if fromBad > 0 {
			return
		}
		if time.Now().After(give) {
			t.Fatalf("%s served no read in the 20 s after its restart: %+v", bad.Addr, r.Nodes())
		}
	}
}

// A replica that restarts quietly breaks no connection the router sees.
//
// Between two reads, while none of the router's requests is on the wire:
// go-redis drops the closed connections from its pool and dials new ones,
// unseen. Nothing ejected it, so nothing re-admitted it, and its old data
// was read until the next replication check, up to ReplicaCheckInterval
// later (here an hour, so that the reads alone must tell). A new
// connection tells a restart by the process's run_id.
//
// Before its first read (judged, but no read reached it: under the primary
// or nearest policy, or while its shard's reads went elsewhere): the first
// request connection had no run_id to compare with. The checks learn the
// run_id too.
//
// Either way the replica serves no read until a check has judged it since.
func TestAReplicaThatRestartsQuietlyServesNoneUntilJudged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(t *testing.T, ctx context.Context, r *redisroute.Router, key, addr string)
	}{
		{"between two reads", func(t *testing.T, ctx context.Context, r *redisroute.Router, key, addr string) {
			for give := time.Now().Add(10 * time.Second); ; { // its pool holds connections
				if _, fromBad := readFor(t, ctx, r, key, addr, 50*time.Millisecond); fromBad > 0 {
					return
				}
				if time.Now().After(give) {
					t.Fatalf("%s served no read in 10 s: %+v", addr, r.Nodes())
				}
			}
		}},
		{"before its first read", func(t *testing.T, _ context.Context, r *redisroute.Router, _, addr string) {
			waitBehind(t, r, addr, false) // judged by the first check, and not one read
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const key = "quiet:k"
			c, ctx, set := snapshotCluster(t, key)
			r := newRouter(t, c, func(cfg *redisroute.Config) {
				cfg.ReplicaCheckInterval, cfg.RefreshInterval = time.Hour, time.Hour
			})
			shard := shardOfKey(t, ctx, c, key)
			bad := c.Replicas(ctx, shard)[0]
			tc.ready(t, ctx, r, key, bad.Addr)
			fallBehindOnSnapshot(t, ctx, c, shard, bad)
			set("v2", 1)
			restartWithOldData(t, ctx, bad, key)
			stale, fromBad := readFor(t, ctx, r, key, bad.Addr, 3*time.Second)
			if stale != 0 {
				t.Errorf("replica restarted %s, syncing: %d reads answered with old data (%d served by %s); want none", tc.name, stale, fromBad, bad.Addr)
			}
		})
	}
}

// snapshotCluster starts a cluster whose nodes keep snapshots, so that a
// restarted replica comes back with old data, and sets key to v1 with both
// replicas' acknowledgement; set writes key on its primary.
func snapshotCluster(t *testing.T, key string) (c *localcluster.Cluster, ctx context.Context, set func(val string, acks int)) {
	t.Helper()
	c = clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Persistence = localcluster.PersistenceRDB })
	ctx = ctxFor(t, 90*time.Second)
	set = primaryWriter(t, ctx, c, key)
	set("v1", 2)
	return c, ctx, set
}

// fallBehindOnSnapshot has replica bad of shard save a snapshot (of v1),
// then fall behind its primary (localcluster's FallBehind), undone when
// the test ends.
func fallBehindOnSnapshot(t *testing.T, ctx context.Context, c *localcluster.Cluster, shard int, bad *localcluster.Node) {
	t.Helper()
	saveSnapshot(t, ctx, bad)
	undo, err := bad.FallBehind(ctx, c.Primary(ctx, shard))
	t.Cleanup(func() { undo(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
}

// restartWithOldData restarts bad and checks that it reads key as v1:
// the tests need a replica back with old data.
func restartWithOldData(t *testing.T, ctx context.Context, bad *localcluster.Node, key string) {
	t.Helper()
	if err := bad.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := readOnly(ctx, bad, key); err != nil || v != "v1" {
		t.Fatalf("the restarted replica reads %q, %v; want v1 (the test needs a replica back with old data)", v, err)
	}
}

// saveSnapshot has n write its snapshot now, once a background save under
// way (a replica's, after a full sync) is done.
func saveSnapshot(t *testing.T, ctx context.Context, n *localcluster.Node) {
	t.Helper()
	admin := n.Client()
	defer admin.Close()
	for give := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := admin.Save(ctx).Err()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "in progress") || time.Now().After(give) {
			t.Fatalf("SAVE on %s: %v", n.Addr, err)
		}
	}
}
