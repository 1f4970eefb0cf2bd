package localcluster_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// A replica that fell behind comes back, restarted, with its old data and its link
// down, is sent the whole data set (a full sync, not a partial one), and
// has the primary's data once its link is up; undo puts the primary's
// settings back.
func TestAReplicaThatFellBehindNeedsAFullSync(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	ctx := ctxFor(t, 60*time.Second)
	primary, replica := c.Primary(ctx, 0), c.Replicas(ctx, 0)[0]
	admin, rep := primary.Client(), replica.Client()
	defer admin.Close()
	defer rep.Close()
	// Written after the replica's last full sync, so its snapshot lacks it.
	if err := admin.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	fullBefore := stat(t, ctx, admin, "stats", "sync_full")

	undo, err := replica.FallBehind(ctx, primary)
	if err == nil {
		err = replica.Restart(ctx)
	}
	if err != nil {
		undo(context.Background())
		t.Fatal(err)
	}
	if link := stat(t, ctx, rep, "replication", "master_link_status"); link != "down" {
		t.Errorf("link right after the restart = %q, want down", link)
	}
	if v, err := readOnlyGet(ctx, rep, "k"); err != redis.Nil {
		t.Errorf("k on the restarted replica = %q, %v; want nothing (its old data)", v, err)
	}
	for stat(t, ctx, rep, "replication", "master_link_status") != "up" {
		if ctx.Err() != nil {
			t.Fatal("the replica never caught up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v, err := readOnlyGet(ctx, rep, "k"); err != nil || v != "v" {
		t.Errorf("k once caught up = %q, %v; want v", v, err)
	}
	if full := stat(t, ctx, admin, "stats", "sync_full"); full != strconv.Itoa(mustAtoi(t, fullBefore)+1) {
		t.Errorf("full syncs: %s before, %s after; want one more", fullBefore, full)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := admin.ConfigGet(ctx, "repl-*").Result()
	if err != nil || got["repl-diskless-sync-delay"] != "0" || got["repl-backlog-size"] != "1048576" {
		t.Errorf("primary's settings after undo = %v, %v; want the delay 0 and the backlog 1mb back", got, err)
	}
}

// stat is one field of one INFO section.
func stat(t *testing.T, ctx context.Context, cl *redis.Client, section, field string) string {
	t.Helper()
	info, err := cl.Info(ctx, section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

func readOnlyGet(ctx context.Context, cl *redis.Client, key string) (string, error) {
	conn := cl.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		return "", err
	}
	return conn.Get(ctx, key).Result()
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
