package localcluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// FailPersistence makes a node's snapshots fail, so it refuses writes with
// MISCONF and serves reads; RestorePersistence mends it, and the snapshot
// it had (here with snapshots on, PersistenceRDB) is back in place, and
// snapshots work again.
func TestANodeThatCannotPersistRefusesWritesUntilMended(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas, cfg.Persistence = 1, 0, localcluster.PersistenceRDB
	})
	ctx := ctxFor(t, 60*time.Second)
	n := c.Primary(ctx, 0)
	cl := n.Client()
	defer cl.Close()
	if err := cl.Set(ctx, "{k}before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.FailPersistence(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.FailPersistence(ctx); err == nil {
		t.Error("a second FailPersistence succeeded, want it refused")
	}
	if err := cl.Set(ctx, "{k}during", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF ") {
		t.Fatalf("SET on a node that cannot persist = %v, want MISCONF", err)
	}
	if v, err := cl.Get(ctx, "{k}before").Result(); err != nil || v != "1" {
		t.Fatalf("GET on a node that cannot persist = %q, %v, want it served", v, err)
	}
	if err := n.RestorePersistence(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "{k}after", "1", 0).Err(); err != nil {
		t.Fatalf("SET once mended = %v", err)
	}
	if fi, err := os.Stat(filepath.Join(n.Dir, "dump.rdb")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("dump.rdb once mended: %v, %v; want a file", fi, err)
	}
	if err := n.RestorePersistence(ctx); err != nil {
		t.Errorf("a second RestorePersistence = %v, want nothing to do", err)
	}
	// Snapshots are whole again: one taken now is loaded by a restart.
	if err := cl.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	after := n.Client()
	defer after.Close()
	if got, err := after.Exists(ctx, "{k}before", "{k}after").Result(); err != nil || got != 2 {
		t.Fatalf("keys after a restart = %d, %v, want both", got, err)
	}
}
