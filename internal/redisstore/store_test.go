package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func newStore(t *testing.T, c *localcluster.Cluster) (*redisstore.Drivers, *redisroute.Router) {
	t.Helper()
	r := newRouterFor(t, c)
	s, err := redisstore.NewDrivers(r, redisstore.DefaultConfig(), driver.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

func online(t *testing.T, s *redisstore.Drivers, id string, lat, lng float64, now time.Time, services ...string) driver.Driver {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Heartbeat(ctx, id, driver.Location{Lat: lat, Lng: lng}, now); err != nil {
		t.Fatalf("heartbeat %s: %v", id, err)
	}
	d, err := s.Apply(ctx, id, driver.Transition{Event: driver.EventGoOnline, Services: services}, now)
	if err != nil {
		t.Fatalf("go_online %s: %v", id, err)
	}
	return d
}

func TestDriverLifecycleAndBatchGet(t *testing.T) {
	c := clustertest.Start(t)
	s, _ := newStore(t, c)
	ctx := context.Background()

	d := online(t, s, "d1", 1.30, 103.80, t0, "car")
	if d.Status != driver.StatusAvailable || d.Version != 1 || d.Location.Lat != 1.30 {
		t.Fatalf("after go_online: %+v", d)
	}
	got, err := s.Get(ctx, "d1")
	if err != nil || got.Status != driver.StatusAvailable || !got.LastHeartbeat.Equal(t0) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, "nobody"); !errors.Is(err, redisstore.ErrNotFound) {
		t.Errorf("Get(nobody) = %v, want ErrNotFound", err)
	}
	if _, err := s.Apply(ctx, "d1", driver.Transition{Event: driver.EventStartTrip}, t0); !errors.Is(err, driver.ErrIllegalTransition) {
		t.Errorf("start_trip while available = %v, want ErrIllegalTransition", err)
	}
	// A heartbeat older than the stored one changes nothing.
	if _, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.0, Lng: 103.0}, t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "d1"); got.Location.Lat != 1.30 {
		t.Errorf("an out-of-order heartbeat moved the driver to %v", got.Location)
	}

	online(t, s, "d2", 1.31, 103.81, t0, "bike")
	b, err := s.BatchGet(ctx, []string{"d1", "ghost", "d2", "d1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Drivers) != 2 || b.Drivers[0].ID != "d1" || b.Drivers[1].ID != "d2" || len(b.Missing) != 1 || b.Missing[0] != "ghost" || len(b.Failed) != 0 {
		t.Errorf("BatchGet = %+v", b)
	}
	if _, err := s.BatchGet(ctx, []string{"ok", "bad id!"}); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("BatchGet with a bad id = %v, want ErrInvalidArgument", err)
	}
}

// TestOnlyOneOf100ConcurrentReservationsWins is the guarantee behind
// dispatch: a driver is never reserved by two bookings.
func TestOnlyOneOf100ConcurrentReservationsWins(t *testing.T) {
	c := clustertest.Start(t)
	s, _ := newStore(t, c)
	online(t, s, "hot", 1.3, 103.8, t0, "car")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	others := map[string]int{}
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bk := fmt.Sprintf("booking-%d", i)
			_, err := s.Apply(context.Background(), "hot", driver.Transition{Event: driver.EventReserve, BookingID: bk, Until: t0.Add(time.Minute)}, t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, bk)
			case errors.Is(err, driver.ErrIllegalTransition):
				others["illegal"]++
			case errors.Is(err, redisstore.ErrConflict):
				others["conflict"]++
			default:
				t.Errorf("reserve: unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d reservations won (%v), want exactly 1; others: %v", len(winners), winners, others)
	}
	d, err := s.Get(context.Background(), "hot")
	if err != nil || d.Status != driver.StatusReserved || d.BookingID != winners[0] || d.Version != 2 {
		t.Fatalf("driver after the race = %+v, %v; want reserved by %s at version 2", d, err, winners[0])
	}
	t.Logf("1 winner, others: %v", others)
}

func TestNearbyFindsAvailableDriversAcrossCells(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, r := newStore(t, c)
	ctx := context.Background()
	// A point near a cell corner, so the circle spans several cells.
	cell, _ := geocell.Of(1.3, 103.8, redisstore.DefaultConfig().GeoCellBits)
	box := cell.Bounds()
	lat, lng := box.MaxLat-0.0005, box.MaxLng-0.0005
	online(t, s, "near", lat, lng, t0, "car")
	online(t, s, "across", lat+0.002, lng+0.002, t0, "car") // over the corner, in another cell
	online(t, s, "bike", lat, lng+0.0002, t0, "bike")
	online(t, s, "far", lat+0.2, lng, t0, "car")
	online(t, s, "stale", lat, lng-0.001, t0.Add(-time.Hour), "car")
	online(t, s, "busy", lat+0.001, lng, t0, "car")
	if _, err := s.Apply(ctx, "busy", driver.Transition{Event: driver.EventReserve, BookingID: "b", Until: t0.Add(time.Minute)}, t0); err != nil {
		t.Fatal(err)
	}
	online(t, s, "gone", lat, lng, t0, "car")
	if _, err := s.Apply(ctx, "gone", driver.Transition{Event: driver.EventGoOffline}, t0); err != nil {
		t.Fatal(err)
	}
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: lat, Lng: lng, RadiusM: 1000, Service: "car", Limit: 10}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range res.Drivers {
		got = append(got, d.Driver.ID)
	}
	if fmt.Sprint(got) != "[near across]" || len(res.FailedCells) != 0 {
		t.Errorf("Nearby = %v (failed cells %v), want [near across]", got, res.FailedCells)
	}
	// Moving to a far cell removes the driver from the old cell's index.
	if _, err := s.Heartbeat(ctx, "near", driver.Location{Lat: lat + 0.5, Lng: lng}, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	old := r.Do(ctx, redisroute.Cmd{Args: []any{"ZSCORE", "apollo:geo:{" + cell.String() + "}", "near"}, Key: "apollo:geo:{" + cell.String() + "}", Fresh: true})
	if old.Err != nil || old.Val != nil {
		t.Errorf("driver still indexed in its old cell: %v, %v", old.Val, old.Err)
	}
}
