package localcluster_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// TestMain checks, after every test has run, that no redis-server started by
// this package's tests is still alive and no cluster directory is left.
func TestMain(m *testing.M) {
	base, err := os.MkdirTemp("", "apollo-localcluster-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", base) // t.TempDir and os.MkdirTemp land under base
	code := m.Run()
	if left := clustertest.RedisProcessesUnder(base); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: redis-server processes left running: %v\n", left)
		code = 1
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		fmt.Fprintf(os.Stderr, "FAIL: left behind in the temp dir: %s\n", e.Name())
		code = 1
	}
	os.RemoveAll(base)
	os.Exit(code)
}
