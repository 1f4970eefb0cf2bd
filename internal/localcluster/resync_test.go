package localcluster_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// A replica that fell behind comes back, restarted, with its old data and
// its link down, is sent the whole data set (a full sync, not a partial
// one), and has the primary's data once its link is up; undo puts the
// primary's settings back as they were (here not the cluster's defaults).
func TestAReplicaThatFellBehindNeedsAFullSync(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 1, 1
		cfg.ExtraArgs = append(cfg.ExtraArgs, "repl-backlog-size 2mb", "repl-diskless-sync-delay 1")
	})
	ctx := ctxFor(t, 60*time.Second)
	primary, replica := c.Primary(ctx, 0), c.Replicas(ctx, 0)[0]
	admin := primary.Client()
	defer admin.Close()
	// Written after the replica's last full sync, so its snapshot lacks it.
	if err := admin.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	fullBefore := infoField(t, ctx, primary, "stats", "sync_full")

	undo, err := replica.FallBehind(ctx, primary)
	if err == nil {
		err = replica.Restart(ctx)
	}
	if err != nil {
		undo(context.Background())
		t.Fatal(err)
	}
	if link := infoField(t, ctx, replica, "replication", "master_link_status"); link != "down" {
		t.Errorf("link right after the restart = %q, want down", link)
	}
	if v := readOnReplica(t, ctx, replica, "k"); v != "" {
		t.Errorf("k on the restarted replica = %q; want nothing (its old data)", v)
	}
	if err := waitUntil(ctx, func() bool { return infoField(t, ctx, replica, "replication", "master_link_status") == "up" }); err != nil {
		t.Fatalf("the replica never caught up: %v", err)
	}
	if v := readOnReplica(t, ctx, replica, "k"); v != "v" {
		t.Errorf("k once caught up = %q; want v", v)
	}
	before, _ := strconv.Atoi(fullBefore)
	if full := infoField(t, ctx, primary, "stats", "sync_full"); full != strconv.Itoa(before+1) {
		t.Errorf("full syncs: %s before, %s after; want one more", fullBefore, full)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := admin.ConfigGet(ctx, "repl-*").Result()
	if err != nil || got["repl-diskless-sync-delay"] != "1" || got["repl-backlog-size"] != "2097152" {
		t.Errorf("primary's settings after undo = %v, %v; want the delay 1 and the backlog 2mb back", got, err)
	}
}

// infoField is one field of one section of n's INFO.
func infoField(t *testing.T, ctx context.Context, n *localcluster.Node, section, field string) string {
	t.Helper()
	info, err := n.Info(ctx, section)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s of %s has no %s", section, n.Addr, field)
	return ""
}
