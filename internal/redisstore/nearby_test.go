package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// TestNearbyReadsRecordsNearestFirstAPageAtATime: drivers the index still
// holds but who cannot take a booking (their heartbeat is stale) do not hide
// an available one farther out, and the search reads driver records a page
// at a time, not every driver the index returns.
func TestNearbyReadsRecordsNearestFirstAPageAtATime(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	r := newRouterFor(t, c, noExtraRequests)
	s, err := redisstore.NewDrivers(r, redisstore.DefaultConfig(), driver.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const lat, lng = 1.3, 103.8
	const stale, free = 2, 30
	for i := 0; i < stale; i++ { // 100–120 m north, last heard of an hour ago
		online(t, s, fmt.Sprintf("stale-%02d", i), lat+0.0009+float64(i)*0.0002, lng, t0.Add(-time.Hour), "car")
	}
	for i := 0; i < free; i++ { // 500–1,800 m south
		online(t, s, fmt.Sprintf("free-%02d", i), lat-0.0045-float64(i)*0.0004, lng, t0, "car")
	}
	before := hmgets(t, c)
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: lat, Lng: lng, RadiusM: 3000, Service: "car", Limit: 3}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	read := hmgets(t, c) - before
	var got []string
	for _, d := range res.Drivers {
		got = append(got, d.Driver.ID)
	}
	if fmt.Sprint(got) != "[free-00 free-01 free-02]" {
		t.Errorf("Nearby = %v, want the three nearest available drivers [free-00 free-01 free-02]", got)
	}
	// A page is 2 × Limit records: the first holds the 2 stale drivers and enough free ones.
	if read > 6 {
		t.Errorf("read %d driver records of the %d indexed to find 3 available, want one page of 6", read, stale+free)
	}
	t.Logf("read %d of %d driver records", read, stale+free)
}

// noExtraRequests turns off the router's hedges and retries for a test that
// counts the commands the nodes served: each would be an HMGET the store did
// not ask for (a hedge after 5 ms is common on a loaded CI machine; CI
// 2026-12-03 counted 8 for a page of 6).
func noExtraRequests(cfg *redisroute.Config) {
	cfg.HedgeBudget, cfg.RetryBudget, cfg.BudgetBurst = 0, 0, 0
}

// hmgets is how many HMGETs the cluster's nodes have served.
func hmgets(t *testing.T, c *localcluster.Cluster) int {
	t.Helper()
	total := 0
	for _, n := range c.Nodes() {
		info, err := n.Info(context.Background(), "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_hmget:calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			v, err := strconv.Atoi(calls)
			if err != nil {
				t.Fatalf("commandstats line %q: %v", line, err)
			}
			total += v
		}
	}
	return total
}

// TestTheGeoIndexHoldsAvailableDriversOnly: a driver leaves its cell's set
// when reserved (and stays out through its heartbeats) and joins it again
// when free, so a search reads available drivers, not every busy one nearby.
func TestTheGeoIndexHoldsAvailableDriversOnly(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, r := newStore(t, c)
	ctx := context.Background()
	const lat, lng = 1.3, 103.8
	cell, _ := geocell.Of(lat, lng, redisstore.DefaultConfig().GeoCellBits)
	key := redisstore.GeoKey(cell.String())
	indexed := func() bool {
		res := r.Do(ctx, redisroute.Cmd{Args: []any{"ZSCORE", key, "d1"}, Key: key, Fresh: true})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		return res.Val != nil
	}
	if _, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: lat, Lng: lng}, t0); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what    string
		do      func() error
		indexed bool
	}{
		{"offline, heartbeating", func() error { return nil }, false},
		{"on line", apply(s, "d1", driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}), true},
		{"reserved", apply(s, "d1", driver.Transition{Event: driver.EventReserve, BookingID: "b1", Until: t0.Add(time.Minute)}), false},
		{"reserved, heartbeating", heartbeat(s, "d1", lat, lng, t0.Add(time.Second)), false},
		{"declined", apply(s, "d1", driver.Transition{Event: driver.EventDecline}), true},
		{"available, heartbeating", heartbeat(s, "d1", lat, lng, t0.Add(2*time.Second)), true},
		{"off line", apply(s, "d1", driver.Transition{Event: driver.EventGoOffline}), false},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if got := indexed(); got != st.indexed {
			t.Errorf("%s: indexed = %v, want %v", st.what, got, st.indexed)
		}
	}
}

func apply(s *redisstore.Drivers, id string, tr driver.Transition) func() error {
	return func() error { _, err := s.Apply(context.Background(), id, tr, t0); return err }
}

func heartbeat(s *redisstore.Drivers, id string, lat, lng float64, at time.Time) func() error {
	return func() error {
		_, err := s.Heartbeat(context.Background(), id, driver.Location{Lat: lat, Lng: lng}, at)
		return err
	}
}
