package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

func runDrillForTest(t *testing.T, args ...string) (drill.Result, int, string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := filepath.Join(tmp, "report.json")
	var stdout, stderr bytes.Buffer
	// Latency is printed, not asserted: these machines are shared and noisy.
	args = append(args, "--json", out, "--html", filepath.Join(tmp, "r.html"), "--slo-max-latency", "1h")
	code := Run(context.Background(), append([]string{"drill"}, args...), &stdout, &stderr)
	var res drill.Result
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no JSON report (exit %d): %v\n%s\n%s", code, err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if left := clustertest.RedisProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("redis-server processes left after the drill: %v", left)
	}
	return res, code, stdout.String()
}

// TestDrillReproducesThe2019IncidentAndApolloSurvivesIt runs the drill of
// the incident, briefly: a replica that crashes (with all three
// configurations), hangs, or that the clients' host can no longer reach
// while the cluster sees nothing wrong, and a password rotation that
// leaves a client which read its password once unable to connect
// (legacy-2019 and Apollo: go-redis v9 fails those the same way, and
// make drill runs it).
func TestDrillReproducesThe2019IncidentAndApolloSurvivesIt(t *testing.T) {
	for _, sc := range []string{"replica-crash", "replica-hang", "replica-cutoff", "password-rotation"} {
		t.Run(sc, func(t *testing.T) {
			if sc == "replica-cutoff" {
				clustertest.NeedFirewall(t)
			}
			configs := "legacy-2019,apollo"
			if sc == "replica-crash" {
				configs = "legacy-2019,go-redis-v9,apollo"
			}
			res, code, out := runDrillForTest(t, "--scenario", sc, "--configs", configs, "--duration", "9s", "--fault-at", "3s", "--drivers", "2000", "--node-timeout", "2s", "--workers", "8")
			t.Logf("\n%s", out[strings.LastIndex(out, "== "):])
			byName := map[string]drill.Report{}
			for _, r := range res.Configs {
				byName[r.Name] = r
			}
			legacy, apollo := byName["legacy-2019"], byName["apollo"]
			if want := len(strings.Split(configs, ",")); len(res.Configs) != want || legacy.Calls == 0 || apollo.Calls == 0 {
				t.Fatalf("configs = %d, want %s", len(res.Configs), configs)
			}
			if sc == "replica-crash" && byName["go-redis-v9"].Calls == 0 {
				t.Error("go-redis-v9 made no call")
			}
			below := 0
			for _, s := range legacy.PerSecond {
				if s.Fault && s.SuccessRatio() < 0.5 {
					below++
				}
			}
			if below < 4 {
				t.Errorf("legacy-2019: only %d fault seconds below 50%% call success, want the incident", below)
			}
			if apollo.CallSuccessRatio < 0.9999 || code != 0 || !res.SLO.Passed {
				t.Errorf("apollo: call success %.5f, exit %d, SLO %+v", apollo.CallSuccessRatio, code, res.SLO)
			}
		})
	}
}

// TestDrillOtherScenariosRunEndToEnd runs the remaining scenarios against
// apollo alone, briefly: each must inject, heal and report.
func TestDrillOtherScenariosRunEndToEnd(t *testing.T) {
	for _, sc := range []string{"replica-busy", "primary-crash", "slow-replica", "reshard", "full-outage", "replica-lossy"} {
		t.Run(sc, func(t *testing.T) {
			if sc == "replica-lossy" {
				clustertest.NeedFirewall(t)
			}
			// 7 s, the fault from 2 s; full-outage heals half way between
			// the fault and the end, and must have recovered by its last
			// second: 10 s, the fault from 3 s.
			duration, faultAt := "7s", "2s"
			if sc == "full-outage" {
				duration, faultAt = "10s", "3s"
			}
			res, code, out := runDrillForTest(t, "--scenario", sc, "--configs", "apollo", "--duration", duration, "--fault-at", faultAt, "--drivers", "2000", "--node-timeout", "2s", "--workers", "8")
			if len(res.Configs) != 1 || res.Configs[0].Calls == 0 || res.Fault == "" {
				t.Fatalf("report: %+v", res)
			}
			r := res.Configs[0]
			t.Logf("%s: %s, call success %.4f%%, max %.1f ms, exit %d", sc, res.Fault, 100*r.CallSuccessRatio, r.MaxMs, code)
			if sc == "full-outage" {
				last := r.PerSecond[len(r.PerSecond)-1]
				if last.SuccessRatio() < 0.99 {
					t.Errorf("full-outage: not recovered in the last second: %+v\n%s", last, out)
				}
				return
			}
			if sc != "primary-crash" && r.CallSuccessRatio < 0.9999 {
				t.Errorf("%s: call success %.5f, want ≥ 99.99%%\n%s", sc, r.CallSuccessRatio, out)
			}
		})
	}
}

func TestDrillRejectsBadFlags(t *testing.T) {
	tests := []struct{ args, want string }{
		{"--scenario meteor", "unknown scenario"},
		{"--configs apollo,jedis", "unknown config"},
		{"--workers 0", "workers must be within"},
		{"--fault-at 2m --duration 1m", "fault-at must be"},
		{"--redis-addrs 127.0.0.1:1", "only replica-hang"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			code, _, stderr := run(t, context.Background(), append([]string{"drill"}, strings.Fields(tt.args)...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want usage error with %q", code, stderr, tt.want)
			}
		})
	}
}

func TestDrillInterruptedLeavesNoProcess(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stdout syncBuffer
	var stderr bytes.Buffer
	go func() {
		done <- Run(ctx, []string{"drill", "--scenario", "replica-hang", "--duration", "60s", "--drivers", "500", "--node-timeout", "2s"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stdout.String(), "t=  3s") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("drill did not stop within 60s of cancellation")
	}
	if left := clustertest.RedisProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("redis-server processes left after an interrupted drill: %v", left)
	}
}

// syncBuffer is a bytes.Buffer safe to read while another goroutine writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDrillAnExistingCluster drills a cluster it did not start (as a user
// would drill staging): CLIENT PAUSE on a replica, then the drill's drivers
// are removed again.
func TestDrillAnExistingCluster(t *testing.T) {
	c := clustertest.Start(t)
	res, code, out := runDrillForTest(t, "--redis-addrs", strings.Join(c.Addrs()[:1], ","), "--scenario", "replica-hang",
		"--configs", "apollo,go-redis-v9", "--duration", "7s", "--fault-at", "2s", "--drivers", "1000", "--workers", "8")
	if len(res.Configs) != 2 || !strings.Contains(res.Fault, "CLIENT PAUSE") {
		t.Fatalf("report: %+v\n%s", res, out)
	}
	if a := res.Configs[0]; a.CallSuccessRatio < 0.9999 || code != 0 {
		t.Errorf("apollo on an existing cluster: call success %.5f, exit %d\n%s", a.CallSuccessRatio, code, out)
	}
	for _, n := range c.Nodes() {
		cl := n.Client()
		keys, err := cl.Keys(context.Background(), "apollo:drv:{apollo-drill-*").Result()
		cl.Close()
		if err != nil || len(keys) != 0 {
			t.Errorf("%s still holds %d drill drivers (%v)", n.Addr, len(keys), err)
		}
	}
}

func TestDrillUnreachableCluster(t *testing.T) {
	code, _, stderr := run(t, context.Background(), "drill", "--redis-addrs", "127.0.0.1:1", "--scenario", "replica-hang", "--duration", "5s", "--fault-at", "2s")
	if code != exitFailure || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want a failure naming the address", code, stderr)
	}
}
