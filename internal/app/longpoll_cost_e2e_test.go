package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// commandsOver counts the Redis commands the cluster processed during d.
func commandsOver(t *testing.T, c *localcluster.Cluster, d time.Duration) int64 {
	t.Helper()
	before, err := c.CommandsProcessed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	after, err := c.CommandsProcessed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return after - before
}

// 1,000 long polls on 100 bookings cost Redis what changes, not waiters ×
// time: while nothing changes they add no command to the instance's own
// background work (polling, each would read its booking 10 times a second,
// a confirmed read of three commands); each change costs its readers one
// read each; and a SIGTERM answers the rest at once, logging no error.
func TestAThousandLongPollsCostRedisOnlyWhatChanges(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = c.Addrs()
	cfg.Booking.AllocationTimeout = 2 * time.Minute // searching throughout
	var errs errorLines
	a, stop := startServing(t, cfg, slog.New(slog.NewJSONHandler(&errs, nil)))
	defer stop()
	api, admin := "http://"+a.APIAddr(), "http://"+a.AdminAddr()
	ids := createSearching(t, a, 100)

	const perBooking = 10
	waiters := perBooking * len(ids)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: waiters, MaxConnsPerHost: 0}}
	type answer struct {
		id, status string
		code       int
	}
	answers := make(chan answer, waiters)
	// The background work alone, before any waiter (with the creates'
	// retries settled into their backoff).
	time.Sleep(2 * time.Second)
	base := commandsOver(t, c, 3*time.Second)
	// stopping: from the SIGTERM on, a poll answered unchanged is done.
	var retried, repolled, early atomic.Int64
	var stopping atomic.Bool
	const wait = 30 * time.Second
	for _, id := range ids {
		for range perBooking {
			go func() {
				var last answer
				for {
					sent := time.Now()
					resp, err := client.Get(fmt.Sprintf("%s/v1/bookings/%s?wait=%s&version=%d", api, id, wait, 1))
					if err != nil {
						if stopping.Load() && last.code == http.StatusOK {
							answers <- last // its poll again found the server gone
							return
						}
						answers <- answer{id: id, code: -1}
						return
					}
					var b bookingJSON
					json.NewDecoder(resp.Body).Decode(&b)
					resp.Body.Close()
					if resp.StatusCode == http.StatusServiceUnavailable {
						// As a rider's app would: a 503 (a read no replica
						// could confirm in time, when 1,000 polls start at
						// once on a slow machine) is retried.
						retried.Add(1)
						time.Sleep(100 * time.Millisecond)
						continue
					}
					last = answer{id: id, status: b.Status, code: resp.StatusCode}
					if last.code == http.StatusOK && b.Version == 1 && !stopping.Load() {
						// Its wait ran out unchanged (a slow start can
						// outlast it): polled again, as a rider's app
						// would. Answered unchanged any sooner, it would
						// be a poll that does not wait.
						if time.Since(sent) < wait {
							early.Add(1)
						}
						repolled.Add(1)
						continue
					}
					answers <- last
					return
				}
			}()
		}
	}
	inFlight := `apollo_http_requests_in_flight{route="GET /v1/bookings/{id}"}`
	for deadline := time.Now().Add(60 * time.Second); metric(t, admin, inFlight) != fmt.Sprint(waiters); {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, want every poll waiting", inFlight, metric(t, admin, inFlight))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// In flight counts a poll from its start, before its first read: the
	// quietest of a few 3 s windows is the waiting itself (polling would
	// cost about 90,000 commands in every one of them).
	waiting := int64(-1)
	for range 5 {
		w := commandsOver(t, c, 3*time.Second)
		if waiting < 0 || w < waiting {
			waiting = w
		}
		if waiting-base <= int64(waiters)/2 {
			break
		}
	}
	t.Logf("Redis commands in 3 s: %d with no waiter, %d with %d waiting (polling would add about %d); %d polls retried after a 503 as they started, %d polled again after their wait ran out", base, waiting, waiters, waiters*10*3*3, retried.Load(), repolled.Load())
	if extra := waiting - base; extra > int64(waiters) { // polling: 90 a waiter in 3 s
		t.Errorf("%d waiters cost %d commands in 3 s in which nothing changed (background alone: %d): they poll", waiters, extra, base)
	}

	// Half the bookings change: their waiters, and only theirs, answer.
	before, _ := c.CommandsProcessed(context.Background())
	changed := ids[:len(ids)/2]
	for _, id := range changed {
		if _, err := a.Bookings().Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	for range len(changed) * perBooking {
		select {
		case ans := <-answers:
			if ans.code != 200 || ans.status != "cancelled" {
				t.Fatalf("a waiter of %s got %d %q, want 200 cancelled", ans.id, ans.code, ans.status)
			}
			got[ans.id]++
		case <-time.After(20 * time.Second):
			t.Fatalf("%d waiters answered 20 s after %d cancels, want %d", len(got), len(changed), len(changed)*perBooking)
		}
	}
	after, _ := c.CommandsProcessed(context.Background())
	t.Logf("%d changes answered %d waiters for %d Redis commands (%.1f a change)", len(changed), len(changed)*perBooking, after-before, float64(after-before)/float64(len(changed)))

	// SIGTERM: the other half answer at once, unchanged.
	stopping.Store(true)
	start := time.Now()
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	took := time.Since(start)
	for range waiters - len(changed)*perBooking {
		ans := <-answers
		if ans.code != 200 || ans.status != "searching" {
			t.Errorf("at shutdown a waiter of %s got %d %q, want 200 searching", ans.id, ans.code, ans.status)
		}
	}
	if took >= 30*time.Second {
		t.Errorf("the shutdown took %s: it waited the long polls out", took)
	}
	if n := early.Load(); n != 0 {
		t.Errorf("%d polls were answered with their booking unchanged before their %s wait was up", n, wait)
	}
	if n := errs.n.Load(); n != 0 {
		t.Errorf("%d errors logged", n)
	}
	t.Logf("shutdown with %d waiters took %s", waiters-len(changed)*perBooking, took.Round(time.Millisecond))
}
