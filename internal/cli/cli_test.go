package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/verify"
)

func run(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{nil, exitOK, "Usage: apollo <command>"},
		{[]string{"help"}, exitOK, "Commands:"},
		{[]string{"version"}, exitOK, "apollo "},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"cluster"}, exitUsage, "needs a subcommand"},
		{[]string{"cluster", "sideways"}, exitUsage, "unknown cluster subcommand"},
		{[]string{"cluster", "up", "--primaries", "0"}, exitUsage, "primaries must be within"},
		{[]string{"cluster", "up", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"cluster", "up", "extra"}, exitUsage, "unexpected arguments"},
		{[]string{"cluster", "up", "--help"}, exitOK, "-node-timeout"},
		{[]string{"cluster", "status", "--state-file", "/nonexistent/x.json"}, exitFailure, "is `apollo cluster up` running?"},
		{[]string{"check", "--print-acl-rules"}, exitOK, "resetkeys ~apollo:* resetchannels &apollo:* -@all +multi +discard +cluster|slots"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := run(t, context.Background(), tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.wantCode, errs)
			}
			if !strings.Contains(out+errs, tt.wantOut) {
				t.Errorf("output does not contain %q:\n%s%s", tt.wantOut, out, errs)
			}
		})
	}
}

func TestFlagsFallBackToEnvironment(t *testing.T) {
	t.Setenv("APOLLO_PRIMARIES", "0")
	code, _, errs := run(t, context.Background(), "cluster", "up")
	if code != exitUsage || !strings.Contains(errs, "primaries must be within") {
		t.Fatalf("APOLLO_PRIMARIES=0: code %d, stderr %q; want the env value validated", code, errs)
	}
	t.Setenv("APOLLO_NODE_TIMEOUT", "soon")
	code, _, errs = run(t, context.Background(), "cluster", "up", "--primaries", "1")
	if code != exitUsage || !strings.Contains(errs, "APOLLO_NODE_TIMEOUT") {
		t.Fatalf("bad APOLLO_NODE_TIMEOUT: code %d, stderr %q; want a usage error naming it", code, errs)
	}
}

func TestClusterUpStatusAndStopOnCancel(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- Run(ctx, []string{"cluster", "up", "--primaries", "3", "--replicas", "1", "--dir", dir, "--state-file", state}, &out, &errb)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(state); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no state file after 60s; stderr: %s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := readClusterState(state)
	if err != nil {
		t.Fatal(err)
	}
	code, sout, serr := run(t, context.Background(), "cluster", "status", "--state-file", state)
	if code != exitOK || !strings.Contains(sout, "cluster_state:ok") {
		t.Errorf("status: code %d, out %q, err %q", code, sout, serr)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("cluster up exit code %d; stderr: %s", code, errb.String())
	}
	for _, n := range st.Nodes {
		if localcluster.ProcessAlive(n.PID) {
			t.Errorf("node %s (pid %d) still running after cluster up stopped", n.Addr, n.PID)
		}
	}
	if _, err := os.Stat(st.Dir); err == nil {
		t.Errorf("cluster dir %s left behind", st.Dir)
	}
	if _, err := os.Stat(state); err == nil {
		t.Errorf("state file left behind")
	}
}

// Every fault the nemesis knows is explained in verify's help.
func TestVerifyHelpExplainsEveryFault(t *testing.T) {
	help := strings.Join(strings.Fields(verifySynopsis), " ")
	for _, f := range verify.FaultNames() {
		if !strings.Contains(help, " "+f+" (") && !strings.Contains(help, " "+f+",") {
			t.Errorf("verify's help does not explain the fault %q", f)
		}
	}
}

// A verify refused for how it was asked, or for a fault the machine
// cannot make, leaves no directory behind.
func TestARefusedVerifyLeavesNoDirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(f, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		path     string // PATH; "" leaves it
		args     []string
		wantCode int
		want     string
	}{
		{"no history", "", []string{"verify", "--check", f}, exitUsage, "holds no recorded operation"},
		{"no redis-server", t.TempDir(), []string{"verify", "--faults", "handshake", "--apollo-bin", "/bin/true"}, exitFailure, "redis-server not found"},
		{"a serve flag without its dashes", "", []string{"verify", "--serve-flag", "booking-acks=2"}, exitUsage, "give it with its dashes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where verify makes its directory when --dir is not given
			if tc.path != "" {
				t.Setenv("PATH", tc.path)
			}
			code, out, errs := run(t, context.Background(), tc.args...)
			left, err := os.ReadDir(tmp)
			if code != tc.wantCode || err != nil || len(left) != 0 || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, left %v (%v), want %d, %q and nothing:\n%s%s", code, left, err, tc.wantCode, tc.want, out, errs)
			}
		})
	}
}

// Recorded operations for verify --check: a first heartbeat; a go_online
// answered on_trip, which no sequence of events explains (a violation);
// a go_online whose outcome is unknown, recorded without a deadline.
const (
	heartbeatOp       = `{"id":0,"client":1,"kind":"heartbeat","driver_id":"d1","invoke_ns":1,"return_ns":2,"outcome":"ok","http_status":200,"seen":{"status":"offline"}}`
	onTripOp          = `{"id":1,"client":1,"kind":"driver_event","event":"go_online","driver_id":"d1","invoke_ns":3,"return_ns":4,"outcome":"ok","http_status":200,"seen":{"status":"on_trip","version":1}}`
	unknownGoOnlineOp = `{"id":1,"client":1,"kind":"driver_event","event":"go_online","driver_id":"d1","invoke_ns":3,"return_ns":4,"outcome":"unknown","http_status":200,"seen":{"status":"available","version":1}}`
)

// verify --check reads a run written by --json or a bare history, and
// refuses a file that holds no operation rather than pass it; a violation
// has an exit code of its own.
func TestVerifyCheckRefusesAFileWithNoHistory(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		wantCode   int
		want       string
	}{
		{"empty object", `{}`, exitUsage, "holds no recorded operation"},
		{"not JSON", `nope`, exitUsage, "invalid character"},
		{"a run", `{"history":{"ops":[` + heartbeatOp + `]}}`, exitOK, "operations: 1"},
		{"a bare history", `{"ops":[` + heartbeatOp + `]}`, exitOK, "operations: 1"},
		// Recorded by a build without deadlines: told, since it may be why
		// a partition is undecided.
		{"an unknown write without a deadline", `{"ops":[` + heartbeatOp + `,` + unknownGoOnlineOp + `]}`,
			exitOK, "unknown 1, 1 of them writes without a deadline, open to the run's end"},
		// Straight from offline to on a trip: no sequence of events explains it.
		{"a violation", `{"ops":[` + heartbeatOp + `,` + onTripOp + `]}`, exitViolation, "verdict: fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "run.json")
			if err := os.WriteFile(f, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, context.Background(), "verify", "--check", f, "--dir", t.TempDir())
			if code != tc.wantCode || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, want %d; output does not contain %q:\n%s%s", code, tc.wantCode, tc.want, out, errs)
			}
		})
	}
}

// A violation is exit 3 even when the --json copy cannot be written: the
// failed write is told on stderr, and a script still learns of the bug. A
// passing run whose --json cannot be written is a failed run (1).
func TestAVerifyThatCannotWriteItsJSONStillReportsTheViolation(t *testing.T) {
	for _, tc := range []struct {
		name, ops string
		wantCode  int
	}{
		{"a violation", heartbeatOp + `,` + onTripOp, exitViolation},
		{"a pass", heartbeatOp, exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "run.json")
			if err := os.WriteFile(f, []byte(`{"ops":[`+tc.ops+`]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			unwritable := filepath.Join(dir, "no-such-dir", "out.json")
			code, out, errs := run(t, context.Background(), "verify", "--check", f, "--dir", t.TempDir(), "--json", unwritable)
			if code != tc.wantCode || !strings.Contains(errs, "no-such-dir") || !strings.Contains(out, "verdict:") {
				t.Errorf("exit %d, want %d, with the report and the failed write told:\n%s%s", code, tc.wantCode, out, errs)
			}
		})
	}
}

// The report names each partition porcupine could not decide, so that it
// can be checked again with more time.
func TestVerifyTextNamesTheUndecidedPartitions(t *testing.T) {
	var b strings.Builder
	writeVerifyText(&b, verify.Report{Verdict: verify.Undecided, Partitions: []verify.PartitionResult{
		{Model: "driver", Key: "vd-004", Ops: 441, Verdict: verify.Undecided, Elapsed: 5 * time.Minute},
		{Model: "booking", Key: "b-1", Ops: 9, Verdict: verify.Fail},
	}})
	if out := b.String(); !strings.Contains(out, "UNDECIDED driver vd-004: 441 operations, porcupine gave up after 5m0s") || strings.Contains(out, "b-1") {
		t.Errorf("report:\n%s\nwant the undecided driver named, and only it", out)
	}
}

// Each violation is followed by the faults that lasted near it, so that a
// loss beside a forced failover reads as one.
func TestVerifyTextNamesTheFaultsNearAViolation(t *testing.T) {
	var b strings.Builder
	writeVerifyText(&b, verify.Report{Verdict: verify.Fail, Violations: []verify.Violation{{Code: "created_lost", Message: "booking b-1 was reported created",
		Faults: []string{"forced-switchover: forced failover of a to b, injected at 233.745s, healed by 239.756s"}}}})
	want := "VIOLATION created_lost: booking b-1 was reported created\n  near forced-switchover: forced failover of a to b, injected at 233.745s, healed by 239.756s\n"
	if out := b.String(); !strings.Contains(out, want) {
		t.Errorf("report:\n%s\nwant\n%s", out, want)
	}
}
