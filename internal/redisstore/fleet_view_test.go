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
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

func TestTheViewShowsEachPartitionsOwnerOpenBookingsAndNextDue(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 0 })
	r := newRouterFor(t, c)
	ctx := context.Background()
	ps := partitions(t, 4)
	f := redisstore.NewFleet(r, ps)
	if _, ok, err := f.Acquire(ctx, 1, "inst-a", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	due := time.UnixMilli(time.Now().Add(-3 * time.Second).UnixMilli())
	for i, added := 0, 0; added < 3; i++ {
		id := fmt.Sprintf("bk-v-%d", i)
		if ps.Of(id) != 1 {
			continue
		}
		if err := r.Do(ctx, redisroute.Write("ZADD", ps.OpenKey(1), due.Add(time.Duration(added)*time.Second).UnixMilli(), id)).Err; err != nil {
			t.Fatal(err)
		}
		added++
	}
	// One of them a real booking, created 7 s ago.
	bs := redisstore.NewBookings(r, 0, ps)
	created := time.UnixMilli(time.Now().Add(-7 * time.Second).UnixMilli())
	var id string
	for i := 0; ; i++ {
		if id = fmt.Sprintf("bk-real-%d", i); ps.Of(id) == 1 {
			break
		}
	}
	bk := booking.Booking{ID: id, RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
		Status: booking.Searching, CreatedAt: created, UpdatedAt: created, Deadline: created.Add(30 * time.Second), DueAt: due.Add(10 * time.Second)}
	if _, _, err := bs.Create(ctx, bk); err != nil {
		t.Fatal(err)
	}
	view, err := f.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(view) != 4 {
		t.Fatalf("View has %d partitions, want 4", len(view))
	}
	want := redisstore.PartitionView{Partition: 1, Owner: "inst-a", Open: 4, NextDue: due}
	if got := view[1]; got.Owner != want.Owner || got.Open != want.Open || !got.NextDue.Equal(want.NextDue) {
		t.Errorf("partition 1 = %+v, want %+v", got, want)
	}
	if got := view[1].Created; len(got) != 1 || !got[0].Equal(created) {
		t.Errorf("partition 1's creation times = %v, want [%v] (the one real booking)", got, created)
	}
	for _, p := range []int{0, 2, 3} {
		if got := view[p]; got.Owner != "" || got.Open != 0 || !got.NextDue.IsZero() {
			t.Errorf("partition %d = %+v, want unowned and empty", p, got)
		}
	}
}

func TestAnAnnouncementIsReadBackUntilItExpires(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 0 })
	r := newRouterFor(t, c)
	ctx := context.Background()
	f := redisstore.NewFleet(r, partitions(t, 4))
	if err := f.Announce(ctx, "inst-a", []byte(`{"rules_version":7}`), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	got, err := f.Announcements(ctx, []string{"inst-a", "inst-b"})
	if err != nil || string(got["inst-a"]) != `{"rules_version":7}` || len(got) != 1 {
		t.Fatalf("Announcements = %q, %v; want inst-a's only", got, err)
	}
	time.Sleep(400 * time.Millisecond)
	if got, err := f.Announcements(ctx, []string{"inst-a"}); err != nil || len(got) != 0 {
		t.Fatalf("Announcements after the TTL = %q, %v; want none", got, err)
	}
}
