package verify_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/verify"
)

// A short verify run of the current build, two instances, four kinds of
// fault: every check passes, and the run really exercised something.
// (make verify runs the long ones.)
func TestAShortVerifyRunOfThisBuildFindsNoViolation(t *testing.T) {
	if testing.Short() {
		t.Skip("a verify run takes about a minute")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "apollo")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/apollo-platform/apollo/cmd/apollo").CombinedOutput(); err != nil {
		t.Fatalf("build apollo: %v\n%s", err, out)
	}
	cfg := verify.DefaultConfig()
	cfg.Bin, cfg.Dir, cfg.Duration = bin, dir, 30*time.Second
	cfg.Faults = []string{"handshake", "primary-crash", "instance-kill", "replica-hang"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := verify.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if left := clustertest.RedisProcessesUnder(dir); len(left) > 0 {
		t.Errorf("redis-server processes left behind: %v", left)
	}
	// Under the race detector porcupine is many times slower: a generous
	// bound per partition.
	rep := verify.Check(h, verify.Options{OutDir: dir, PartitionTimeout: 90 * time.Second})
	c := rep.Counts
	t.Logf("%d operations (%v), %d bookings, %d drivers, %d faults: %s", c.Ops, c.ByOutcome, c.Bookings, c.Drivers, c.Faults, rep.Verdict)
	for _, ch := range rep.Checks {
		t.Logf("  %s: %s %s", ch.Name, ch.Verdict, ch.Detail)
	}
	for _, v := range rep.Violations {
		t.Errorf("%s: %s", v.Code, v.Message)
	}
	if rep.Verdict != verify.Pass {
		t.Errorf("verdict %s, want pass", rep.Verdict)
		if raw, err := json.Marshal(h); err == nil {
			f := filepath.Join(os.TempDir(), "apollo-verify-failed-history.json")
			if os.WriteFile(f, raw, 0o644) == nil {
				t.Logf("history written to %s", f)
			}
		}
	}
	if c.Bookings < 50 || c.Faults < 2 || c.ByOutcome[verify.OK] < 1000 {
		t.Errorf("the run did too little to mean anything: %d bookings, %d faults, %d ok operations", c.Bookings, c.Faults, c.ByOutcome[verify.OK])
	}
}
