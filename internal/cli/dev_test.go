package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

func waitForFile(t *testing.T, path string, d time.Duration, done <-chan int, stderr fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case code := <-done:
			t.Fatalf("command exited with %d before writing %s; stderr: %s", code, path, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written after %s", path, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDevServesTheFleetAndStopsCleanly(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	state := filepath.Join(tmp, "dev.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"dev", "--drivers", "300", "--instances", "2", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--state-file", state, "--log-level", "warn"}, &out, &errb)
	}()
	waitForFile(t, state, 90*time.Second, done, &errb)
	var st devState
	b, _ := os.ReadFile(state)
	if err := json.Unmarshal(b, &st); err != nil || len(st.Nodes) != 9 || len(st.APIURLs) != 2 || st.APIURLs[0] != st.APIURL {
		t.Fatalf("state file %s: %v", b, err)
	}
	// Both instances serve, and share the open index's 64 partitions.
	for i, admin := range st.AdminURLs {
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			resp, err := http.Get(admin + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "\napollo_fleet_partitions_owned 32\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d does not hold half the partitions after 15 s", i+1)
			}
		}
		resp, err := http.Get(st.APIURLs[i] + "/v1/drivers/drv-000002")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("instance %d: GET a driver = %d", i+1, resp.StatusCode)
		}
	}
	for _, path := range []string{st.APIURL + "/v1/drivers/drv-000001", st.AdminURL + "/readyz", st.AdminURL + "/metrics",
		st.APIURL + "/v1/drivers/nearby?lat=1.35&lng=103.82&radius_m=20000&service=car&limit=5"} {
		resp, err := http.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d: %s", path, resp.StatusCode, body)
		}
		if strings.Contains(path, "nearby") && !strings.Contains(string(body), `"distance_m"`) {
			t.Errorf("nearby found no driver in the seeded fleet: %s", body)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("dev exit code %d; stderr: %s", code, errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("dev did not stop within 60s of Ctrl-C")
	}
	if left := clustertest.RedisProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("redis-server processes left after dev stopped: %v", left)
	}
	if !strings.Contains(out.String(), "curl") {
		t.Errorf("dev printed no example requests:\n%s", out.String())
	}
	fmt.Fprint(io.Discard, out.String())
}
