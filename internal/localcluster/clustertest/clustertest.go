// Package clustertest starts a real local Redis Cluster for a test and stops
// it when the test ends, whether it passed, failed or panicked.
package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// Start starts a cluster (3 primaries × 2 replicas unless edit changes the
// config) and registers its Close with t.Cleanup. A missing redis-server
// fails the test with the install instructions: integration tests are the
// point, so they are never silently skipped.
func Start(t testing.TB, edit ...func(*localcluster.Config)) *localcluster.Cluster {
	t.Helper()
	cfg := localcluster.DefaultConfig()
	cfg.Dir = t.TempDir()
	for _, e := range edit {
		e(&cfg)
	}
	c, err := localcluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start local cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close local cluster: %v", err)
		}
	})
	return c
}

// RedisProcessesUnder lists the redis-server processes whose working
// directory is under dir ("pid in cwd"): what a test that started clusters
// there must not leave behind.
func RedisProcessesUnder(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		comm, err := os.ReadFile(filepath.Join(p, "comm"))
		if err != nil || !strings.HasPrefix(string(comm), "redis-server") {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil && strings.HasPrefix(cwd, dir) {
			out = append(out, filepath.Base(p)+" in "+cwd)
		}
	}
	return out
}

// NeedFirewall fails the test when Cluster.Isolate cannot work here: like
// a missing redis-server, a missing iptables is an install step, not a
// reason to skip.
func NeedFirewall(t testing.TB) {
	t.Helper()
	if err := localcluster.CheckFirewall(context.Background()); err != nil {
		t.Fatalf("%v (apt-get install iptables, and run the tests as root)", err)
	}
}
