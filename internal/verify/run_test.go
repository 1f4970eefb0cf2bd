package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/verify"
)

// A short verify run of the current build, two instances, eight kinds of
// fault (one a pair): every check passes, and the run really exercised something.
// (make verify runs the long ones. reshard was kept out of this one after
// a run left a driver's history too hard for porcupine to decide in 10
// minutes, for a reason not found; it is back after three 50 s runs of
// these five faults decided every driver in under 0.4 s.)
func TestAShortVerifyRunOfThisBuildFindsNoViolation(t *testing.T) {
	if testing.Short() {
		t.Skip("a verify run takes about a minute")
	}
	clustertest.NeedFirewall(t)
	dir := t.TempDir()
	cfg := verify.DefaultConfig()
	// Eight faults, one after the other, every 3 s for 6 s each, heals
	// taking some seconds (restarts): 88 s reaches the last, with time to
	// hold it.
	cfg.Bin, cfg.Dir, cfg.Duration = buildApollo(t, dir), dir, 88*time.Second
	// The partition comes before the reshard: for 10 s after a MOVED or
	// ASK every read goes to its primary, and a primary cut off in that
	// time shows plain reads a write in flight that the failover then
	// undoes, for up to the 250 ms before its acknowledgements fail (a
	// known limit, README). CI hit it with the reshard just before the
	// partition (2026-12-03); make verify's runs keep every order.
	// The instance is killed together with a replica (two faults at once,
	// fault_joint.go).
	// The password rotation checks, through the fleet, that a rotated
	// password file is used from the next connection on.
	cfg.Faults = []string{"handshake", "primary-partition", "reshard", "instance-kill+replica-crash", "instance-clock", "cluster-restart", "instance-primary-partition", "password-rotation"}
	progress, err := os.Create(filepath.Join(dir, "progress.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer progress.Close()
	cfg.Progress = progress
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := verify.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A long run tells of each fault as it goes.
	if said, err := os.ReadFile(progress.Name()); err != nil || !strings.Contains(string(said), ": inject handshake") || !strings.Contains(string(said), ": heal ") {
		t.Errorf("progress (%v) does not tell of each fault's injection and healing:\n%s", err, said)
	}
	if left := clustertest.RedisProcessesUnder(dir); len(left) > 0 {
		t.Errorf("redis-server processes left behind: %v", left)
	}
	rep := checkWithBinary(t, cfg.Bin, dir, h)
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
		if raw, err := os.ReadFile(filepath.Join(dir, "history.json")); err == nil {
			f := filepath.Join(os.TempDir(), "apollo-verify-failed-history.json")
			if os.WriteFile(f, raw, 0o644) == nil {
				t.Logf("history written to %s", f)
			}
		}
	}
	if c.Bookings < 50 || c.Faults < 2 || c.ByOutcome[verify.OK] < 1000 {
		t.Errorf("the run did too little to mean anything: %d bookings, %d faults, %d ok operations", c.Bookings, c.Faults, c.ByOutcome[verify.OK])
	}
	for _, kind := range cfg.Faults {
		if !slices.ContainsFunc(c.ByFault, func(f verify.FaultCounts) bool { return f.Kind == kind && f.Injected > 0 }) {
			t.Errorf("no %s was injected: %+v", kind, c.ByFault)
		}
	}
}

// checkWithBinary checks h with `verify --check` of the binary under test,
// built without the race detector: porcupine instrumented by it is many
// times slower, and a driver's history that a plain build decides in 20 s
// was left undecided in 90 s under it (CI, 2026-12-03). The checker's own
// code runs under the race detector in its unit tests.
func checkWithBinary(t *testing.T, bin, dir string, h verify.History) verify.Report {
	t.Helper()
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	hist, out := filepath.Join(dir, "history.json"), filepath.Join(dir, "checked.json")
	if err := os.WriteFile(hist, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "verify", "--check", hist, "--partition-timeout", "90s", "--dir", filepath.Join(dir, "check"), "--json", out)
	said, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && (exit.ExitCode() == 3 || exit.ExitCode() == 4)) {
		t.Fatalf("verify --check: %v\n%s", err, said)
	}
	var run struct {
		Report verify.Report `json:"report"`
	}
	if raw, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		t.Fatal(err)
	}
	return run.Report
}

func buildApollo(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "apollo")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/apollo-platform/apollo/cmd/apollo").CombinedOutput(); err != nil {
		t.Fatalf("build apollo: %v\n%s", err, out)
	}
	return bin
}

// The checker catches a loss when there is one: without persistence, a
// restart of every node loses every booking, and the bookings answered 201
// before it are reported lost.
func TestAVerifyRunWithoutPersistenceReportsTheBookingsARestartLost(t *testing.T) {
	if testing.Short() {
		t.Skip("a verify run takes about a minute")
	}
	dir := t.TempDir()
	cfg := verify.DefaultConfig()
	cfg.Bin, cfg.Dir, cfg.Duration, cfg.Instances = buildApollo(t, dir), dir, 15*time.Second, 1
	cfg.Faults, cfg.Persistence = []string{"cluster-restart"}, localcluster.PersistenceNone
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := verify.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep := verify.Check(h, verify.Options{PartitionTimeout: 90 * time.Second})
	lost := 0
	for _, v := range rep.Violations {
		if v.Code == "created_lost" {
			lost++
		}
	}
	if lost == 0 || rep.Verdict != verify.Fail {
		t.Fatalf("verdict %s with %d created_lost; want the bookings created before the restart reported lost (violations %+v)", rep.Verdict, lost, rep.Violations)
	}
	if fc := rep.Counts.ByFault; len(fc) != 1 || len(fc[0].Effects) == 0 || !strings.Contains(fc[0].Effects[0], "persistence none") {
		t.Errorf("fault counts %+v, want the restart's effect", fc)
	}
	t.Logf("%d bookings answered 201 reported lost; %s", lost, rep.Counts.ByFault[0].Effects[0])
}
