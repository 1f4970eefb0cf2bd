package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

func TestBookingsCreateIsIdempotentAndUpdatesCompareVersions(t *testing.T) {
	c := clustertest.Start(t)
	s := redisstore.NewBookings(newRouterFor(t, c), 1, partitions(t, 8))
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	b := booking.Booking{ID: "bk-1", RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
		Status: booking.Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Second)}
	if ok, err := s.Exists(ctx, "bk-1"); ok || err != nil {
		t.Fatalf("Exists before Create = %v, %v", ok, err)
	}
	stored, created, err := s.Create(ctx, b)
	if err != nil || !created || stored.Version != 1 {
		t.Fatalf("Create = %+v, %v, %v", stored, created, err)
	}
	if ok, err := s.Exists(ctx, "bk-1"); !ok || err != nil {
		t.Fatalf("Exists after Create = %v, %v", ok, err)
	}
	again := b
	again.RiderID = "someone-else"
	got, created, err := s.Create(ctx, again)
	if err != nil || created || got.RiderID != "r1" {
		t.Fatalf("second Create = %+v, %v, %v; want the first booking back", got, created, err)
	}
	if ids, err := s.Claim(ctx, fleet.Alone(8).Owned(), now.Add(time.Minute), time.Second, 10); err != nil || len(ids) != 1 || ids[0] != "bk-1" {
		t.Fatalf("Claim = %v, %v", ids, err)
	}
	cur, err := s.Get(ctx, "bk-1")
	if err != nil || cur.Version != 1 || !cur.Deadline.Equal(b.Deadline) {
		t.Fatalf("Get = %+v, %v", cur, err)
	}
	next := cur
	next.Status = booking.Cancelled
	if err := s.Update(ctx, cur, next); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, cur, next); !errors.Is(err, redisstore.ErrConflict) {
		t.Errorf("stale Update = %v, want ErrConflict", err)
	}
	if ids, _ := s.Claim(ctx, fleet.Alone(8).Owned(), now.Add(time.Hour), time.Second, 10); len(ids) != 0 {
		t.Errorf("a cancelled booking is still open: %v", ids)
	}
	if _, err := s.Get(ctx, "bk-none"); !errors.Is(err, booking.ErrNotFound) {
		t.Errorf("Get(missing) = %v", err)
	}
}
