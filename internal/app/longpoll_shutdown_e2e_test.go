package app_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// errorLines counts the log lines at level ERROR written to it (one
// JSON record per Write, as slog's JSON handler writes them).
type errorLines struct{ n atomic.Int64 }

func (e *errorLines) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"ERROR"`)) {
		e.n.Add(1)
	}
	return len(p), nil
}

// A shutdown does not wait out the long polls (30 s at most each): every
// waiting poll is answered 200 with the booking as it is, Serve returns
// well before the polls would have ended, and nothing is logged as an error.
func TestAShutdownAnswersEveryLongPollAndLogsNoError(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = c.Addrs()[:1]
	cfg.Booking.AllocationTimeout = 2 * time.Minute // searching throughout
	var errs errorLines
	a, stop := startServing(t, cfg, slog.New(slog.NewJSONHandler(&errs, nil)))
	defer stop()
	api, admin := "http://"+a.APIAddr(), "http://"+a.AdminAddr()

	code, b, _ := postBooking(t, api, "poll-shutdown", 1.420, 103.900) // no driver there
	if code != 201 || b.Status != "searching" {
		t.Fatalf("create = %d %+v, want a searching booking", code, b)
	}
	const waiters = 200
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: waiters}}
	codes := make(chan int, waiters)
	for range waiters {
		go func() {
			resp, err := client.Get(fmt.Sprintf("%s/v1/bookings/%s?wait=30s&version=%d", api, b.ID, b.Version))
			if err != nil {
				codes <- -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	inFlight := `apollo_http_requests_in_flight{route="GET /v1/bookings/{id}"}`
	for deadline := time.Now().Add(20 * time.Second); metric(t, admin, inFlight) != fmt.Sprint(waiters); {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, want every poll waiting", inFlight, metric(t, admin, inFlight))
		}
		time.Sleep(20 * time.Millisecond)
	}

	start := time.Now()
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	took := time.Since(start)
	answered := 0
	for range waiters {
		if code := <-codes; code == 200 {
			answered++
		}
	}
	if answered != waiters {
		t.Errorf("%d of %d long polls answered 200", answered, waiters)
	}
	if took >= 30*time.Second { // the polls' own length: a logic bound, not a timing one
		t.Errorf("the shutdown took %s: it waited the long polls out", took)
	}
	if n := errs.n.Load(); n != 0 {
		t.Errorf("%d errors logged during the shutdown", n)
	}
	t.Logf("%d long polls answered; the shutdown took %s", answered, took.Round(time.Millisecond))
}
