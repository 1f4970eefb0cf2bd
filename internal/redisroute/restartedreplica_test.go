package redisroute_test

import (
	"context"
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
	// Snapshots, so that the replica comes back with old data.
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Persistence = localcluster.PersistenceRDB })
	ctx := ctxFor(t, 90*time.Second)
	const key = "restart:k"
	set := primaryWriter(t, ctx, c, key)
	set("v1", 2)

	r := newRouter(t, c)
	shard := shardOfKey(t, ctx, c, key)
	bad := c.Replicas(ctx, shard)[0]
	badAdmin := bad.Client()
	t.Cleanup(func() { badAdmin.Close() })
	if err := badAdmin.Save(ctx).Err(); err != nil { // its snapshot holds v1
		t.Fatal(err)
	}
	undo, err := bad.FallBehind(ctx, c.Primary(ctx, shard))
	t.Cleanup(func() { undo(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	set("v2", 1)
	stale, fromBad := readFor(t, ctx, r, key, bad.Addr, time.Second)
	if stale != 0 || fromBad != 0 {
		t.Errorf("replica down: %d stale reads, %d served by %s; want none", stale, fromBad, bad.Addr)
	}
	if err := bad.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := readOnly(ctx, bad, key); err != nil || v != "v1" {
		t.Fatalf("the restarted replica reads %q, %v; want v1 (the test needs a replica back with old data)", v, err)
	}
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
