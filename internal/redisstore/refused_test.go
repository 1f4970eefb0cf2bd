package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A primary that refuses every write before the command, or a script's
// first write, runs is the cluster that cannot serve, not a bug of
// Apollo's: the store says ErrUnavailable and why, nothing is written,
// reads are still served, and writes work again once the primary takes
// them. Two such refusals: a primary at its maxmemory (with the default
// noeviction policy) refuses every write that adds data, OOM; one that
// cannot persist (its disk is full, its directory no longer writable: its
// last snapshot failed) refuses every write, MISCONF, as long as
// stop-writes-on-bgsave-error is on (the default).
func TestAWriteToAPrimaryThatRefusesWritesIsRefusedAndNothingIsWritten(t *testing.T) {
	for _, tc := range []struct {
		name          string
		refuse, allow func(*localcluster.Node, context.Context) error
		want          error
	}{
		{"full (OOM)", setMaxmemory("1"), setMaxmemory("0"), redisstore.ErrFull},
		{"cannot persist (MISCONF)", (*localcluster.Node).FailPersistence, (*localcluster.Node).RestorePersistence, redisstore.ErrCannotPersist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
			s, _ := newStore(t, c)
			online(t, s, "d1", 1.30, 103.80, t0, "car")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			primary := c.Primary(ctx, 0)
			if err := tc.refuse(primary, ctx); err != nil {
				t.Fatal(err)
			}
			allowed := false
			defer func() {
				if !allowed {
					_ = tc.allow(primary, context.Background())
				}
			}()

			_, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.31, Lng: 103.81}, t0.Add(time.Second))
			if !errors.Is(err, redisstore.ErrUnavailable) || !errors.Is(err, tc.want) {
				t.Fatalf("heartbeat = %v, want ErrUnavailable and %v", err, tc.want)
			}
			_, err = s.Apply(ctx, "d1", driver.Transition{Event: driver.EventGoOffline}, t0.Add(time.Second))
			if !errors.Is(err, tc.want) {
				t.Fatalf("go_offline = %v, want %v", err, tc.want)
			}
			d, err := s.GetFresh(ctx, "d1")
			if err != nil {
				t.Fatalf("a read from the primary = %v, want it served", err)
			}
			if d.Location.Lat != 1.30 || d.Status != driver.StatusAvailable {
				t.Errorf("after two refused writes the driver is %s at %v: a refused write changed it", d.Status, d.Location.Lat)
			}
			allowed = true
			if err := tc.allow(primary, ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.31, Lng: 103.81}, t0.Add(2*time.Second)); err != nil {
				t.Fatalf("heartbeat once the primary takes writes = %v", err)
			}
		})
	}
}

// setMaxmemory sets a node's maxmemory.
func setMaxmemory(v string) func(*localcluster.Node, context.Context) error {
	return func(n *localcluster.Node, ctx context.Context) error {
		cl := n.Client()
		defer cl.Close()
		return cl.ConfigSet(ctx, "maxmemory", v).Err()
	}
}

// An idempotent retry keeps the booking it finds before it returns it, a
// write (see Bookings.Keep); on a primary at its maxmemory it must still
// find it, as the confirmed read it replaced did, however often it comes.
func TestARetryStillFindsItsBookingOnAFullPrimary(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	s := redisstore.NewBookings(newRouterFor(t, c), 1, partitions(t, 8))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := searchingBooking("bk-full-retry")
	if _, created, err := s.Create(ctx, b); err != nil || !created {
		t.Fatalf("create = %v, %v", created, err)
	}
	primary := c.Primary(ctx, 0)
	if err := setMaxmemory("1")(primary, ctx); err != nil {
		t.Fatal(err)
	}
	defer setMaxmemory("0")(primary, context.Background())
	if _, _, err := s.Create(ctx, searchingBooking("bk-full-new")); !errors.Is(err, redisstore.ErrFull) {
		t.Fatalf("a new create on the full primary = %v, want ErrFull: the node is not full", err)
	}
	for i := range 3 {
		if got, err := s.Keep(ctx, b.ID); err != nil || got.ID != b.ID || got.Version != 1 {
			t.Fatalf("keep %d on the full primary = %+v, %v; want the booking", i+1, got, err)
		}
	}
}
