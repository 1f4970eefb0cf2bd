package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// fleetConfig is an instance of a fleet with short leases.
func fleetConfig(c *localcluster.Cluster, id string, lease time.Duration) app.Config {
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs, cfg.InstanceID = c.Addrs(), id
	cfg.Fleet.Partitions, cfg.Fleet.LeaseTTL, cfg.Fleet.RenewEvery = 16, lease, 200*time.Millisecond
	cfg.Booking.ClaimHold, cfg.Booking.ScanEvery = min(lease, 2*time.Second), 200*time.Millisecond
	cfg.Booking.AllocationTimeout = 3 * time.Second
	return cfg
}

// waitOwned waits until a holds n partitions, and says how long it took.
func waitOwned(t *testing.T, a *app.App, n int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for len(a.Member().Owned()) != n {
		if time.Since(start) > within {
			t.Fatalf("%s holds %d partitions after %s, want %d", a.Member().ID(), len(a.Member().Owned()), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func createSearching(t *testing.T, a *app.App, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		b, err := a.Bookings().Create(context.Background(), booking.Request{RiderID: "r", Service: "car", IdempotencyKey: fmt.Sprint(i),
			Pickup: driver.Location{Lat: 1.30 + float64(i)/1000, Lng: 103.8}, Dropoff: driver.Location{Lat: 1.35, Lng: 103.9}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	return ids
}

// An instance that crashes (nothing handed back: its leases, its claims
// and its heartbeat simply stop) leaves its share of the open bookings to
// the others once its leases run out: every booking it was working still
// reaches its deadline's outcome. Without the takeover, its partitions'
// bookings would search for ever.
func TestACrashedInstancesShareIsTakenOverAndItsBookingsStillEnd(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	a, stopA := startServing(t, fleetConfig(c, "a", 2*time.Second), slog.New(slog.DiscardHandler))
	defer stopA()
	b, stopB := startServing(t, fleetConfig(c, "b", 2*time.Second), slog.New(slog.DiscardHandler))
	defer stopB()
	waitOwned(t, a, 8, 10*time.Second)
	waitOwned(t, b, 8, 10*time.Second)

	ids := createSearching(t, b, 40) // no driver anywhere: every booking searches until its deadline
	b.Crash()
	crashed := time.Now()
	took := waitOwned(t, a, 16, 30*time.Second)
	t.Logf("a holds every partition %s after b crashed (lease 2 s)", took.Round(10*time.Millisecond))
	for _, id := range ids {
		for {
			bk, err := a.Bookings().Get(context.Background(), id)
			if err == nil && bk.Status == booking.Unallocated {
				break
			}
			if time.Since(crashed) > 30*time.Second {
				t.Fatalf("booking %s is %s (%v) 30 s after the crash: its partition was not taken over", id, bk.Status, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("all %d bookings unallocated %s after the crash (deadline 3 s after creation)", len(ids), time.Since(crashed).Round(10*time.Millisecond))
}

// An instance that stops (SIGTERM) hands its partitions back: the others
// take them at their next rebalance, long before its leases would have run
// out (20 s here).
func TestAStoppedInstanceHandsItsShareBackAtOnce(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	a, stopA := startServing(t, fleetConfig(c, "a", 20*time.Second), slog.New(slog.DiscardHandler))
	defer stopA()
	b, stopB := startServing(t, fleetConfig(c, "b", 20*time.Second), slog.New(slog.DiscardHandler))
	waitOwned(t, a, 8, 10*time.Second)
	waitOwned(t, b, 8, 10*time.Second)
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	took := waitOwned(t, a, 16, 10*time.Second)
	t.Logf("a holds every partition %s after b stopped (lease 20 s)", took.Round(10*time.Millisecond))
}

// The fleet's list of members is kept in the cluster's time, as bookings
// are. An instance whose host clock is ahead (here 10 minutes) stamped its
// heartbeat, and read the others', by its own clock: it took the others
// for gone, dropped them from the list and held 14 of the 16 partitions;
// and once it crashed, the others would have counted it a member, its
// share untaken, for as long as its clock was ahead on top of the lease.
// --clock-offset moves only the clock the router reads the nodes against,
// not time.Now, so this guards the fleet's wiring to the cluster's time
// (with the heartbeats on the offset clock it fails so); the member's own
// rule is pinned by TestMembersWhoseHostClocksDisagreeStillSplitThePartitions.
func TestACrashedInstanceWhoseClockIsAheadIsTakenOverAfterItsLease(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	cfgA := fleetConfig(c, "a", 2*time.Second)
	cfgA.ClockOffset = 10 * time.Minute
	a, stopA := startServing(t, cfgA, slog.New(slog.DiscardHandler))
	defer stopA()
	b, stopB := startServing(t, fleetConfig(c, "b", 2*time.Second), slog.New(slog.DiscardHandler))
	defer stopB()
	waitOwned(t, a, 8, 10*time.Second)
	waitOwned(t, b, 8, 10*time.Second)
	a.Crash()
	took := waitOwned(t, b, 16, 30*time.Second)
	t.Logf("b holds every partition %s after a, its clock 10 min ahead, crashed (lease 2 s)", took.Round(10*time.Millisecond))
}
