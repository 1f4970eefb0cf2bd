package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// An update is heard by the watchers of its booking, and by no other,
// even one of a booking in the same partition (they share a channel).
func TestAnUpdateIsHeardByTheWatchersOfItsBookingOnly(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 1 })
	ps := partitions(t, 2)
	s := redisstore.NewBookings(newRouterFor(t, c), 1, ps)
	ctx := context.Background()
	now := time.Now()
	var ids []string
	for i := 0; len(ids) < 2; i++ { // two bookings of partition 0
		if id := fmt.Sprintf("bk-w%d", i); ps.Of(id) == 0 {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		b := booking.Booking{ID: id, RiderID: "r", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
			Status: booking.Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Minute)}
		if _, _, err := s.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	w1, err := s.Watch(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Stop()
	w1b, err := s.Watch(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	defer w1b.Stop()
	w2, err := s.Watch(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()

	cur, err := s.Get(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	next := cur
	next.Status = booking.Cancelled
	if err := s.Update(ctx, cur, next); err != nil {
		t.Fatal(err)
	}
	for i, w := range []booking.Watch{w1, w1b} {
		select {
		case <-w.Changed:
		case <-w.Lost:
			t.Fatalf("watcher %d: lost", i)
		case <-time.After(5 * time.Second):
			t.Fatalf("watcher %d of the updated booking heard nothing", i)
		}
	}
	select {
	case <-w2.Changed:
		t.Fatal("the watcher of another booking heard the update")
	case <-time.After(300 * time.Millisecond):
	}
}
