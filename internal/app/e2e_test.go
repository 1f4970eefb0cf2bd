package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(loadgenEnv); spec != "" {
		os.Exit(loadgenMain(spec))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// startApp runs Apollo against c on free ports until the test ends.
func startApp(t *testing.T, c *localcluster.Cluster) (*app.App, string, string) {
	return startAppB(t, c.Addrs()[:1])
}

func startAppB(t testing.TB, addrs []string) (*app.App, string, string) {
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = addrs
	return serveApp(t, cfg)
}

// serveApp runs Apollo with cfg on free loopback ports until the test ends
// and returns it with its API and admin URLs.
func serveApp(t testing.TB, cfg app.Config) (*app.App, string, string) {
	t.Helper()
	a, stop := startServing(t, cfg, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return a, "http://" + a.APIAddr(), "http://" + a.AdminAddr()
}

// startServing runs Apollo with cfg on free loopback ports, logging to
// log; stop shuts it down (as SIGTERM does) and returns Serve's error,
// the same each time it is called.
func startServing(t testing.TB, cfg app.Config, log *slog.Logger) (a *app.App, stop func() error) {
	t.Helper()
	cfg.Listen, cfg.AdminListen, cfg.DrainDelay = "127.0.0.1:0", "127.0.0.1:0", 0
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	return a, sync.OnceValue(func() error { cancel(); return <-done })
}

type batchAnswer struct {
	Drivers []struct {
		ID string `json:"id"`
	} `json:"drivers"`
	Missing []string          `json:"missing"`
	Failed  []json.RawMessage `json:"failed"`
}

// TestBatchGetOverHTTPWhileAReplicaHangs is the 2019 call end to end: batch
// reads of 20 drivers through the HTTP API while one replica is paused.
// Every request must answer 200 with every driver.
func TestBatchGetOverHTTPWhileAReplicaHangs(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 2 * time.Second })
	a, api, admin := startApp(t, c)
	now := time.Now()
	var ids []string
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("e2e-%03d", i)
		ids = append(ids, id)
		if _, err := a.Drivers().Heartbeat(context.Background(), id, driver.Location{Lat: 1.3, Lng: 103.8}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Drivers().Apply(context.Background(), id, driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now); err != nil {
			t.Fatal(err)
		}
	}
	for s := 0; s < 3; s++ {
		cl := c.Primary(context.Background(), s).Client()
		cl.Do(context.Background(), "WAIT", 2, 2000)
		cl.Close()
	}
	if code := get(t, admin+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d before the fault, want 200", code)
	}

	var mu sync.Mutex
	var calls, bad int
	var firstBad string
	stop := time.Now().Add(6 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(stop); i += 8 {
				batch := make([]string, 20)
				for k := range batch {
					batch[k] = ids[(i*20+k)%len(ids)]
				}
				body, _ := json.Marshal(map[string]any{"ids": batch})
				code, ans, raw := batchGet(api, body)
				mu.Lock()
				calls++
				if code != 200 || len(ans.Drivers) != 20 || len(ans.Missing)+len(ans.Failed) != 0 {
					bad++
					if firstBad == "" {
						firstBad = fmt.Sprintf("status %d: %s", code, raw)
					}
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	replica := c.Replicas(context.Background(), 0)[0]
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d batch-get calls over HTTP, %d not fully answered, replica %s paused for the last 4.5 s", calls, bad, replica.Addr)
	if bad != 0 || calls == 0 {
		t.Errorf("%d of %d calls were not 200 with all 20 drivers; first: %s", bad, calls, firstBad)
	}
}

func batchGet(api string, body []byte) (int, batchAnswer, string) {
	resp, err := http.Post(api+"/v1/drivers/batch-get", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, batchAnswer{}, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ans batchAnswer
	json.Unmarshal(raw, &ans)
	return resp.StatusCode, ans, string(raw)
}

func get(t *testing.T, url string) int {
	t.Helper()
	code, _ := getText(t, url)
	return code
}

// getText is GET url's status and body.
func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}
