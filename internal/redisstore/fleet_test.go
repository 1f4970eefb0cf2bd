package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

func partitions(t *testing.T, n int) redisstore.Partitions {
	t.Helper()
	ps, err := redisstore.NewPartitions(n)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestALeaseIsHeldByOneInstanceAndFencesTheClaimsOfOneThatLostIt(t *testing.T) {
	c := clustertest.Start(t)
	r := newRouterFor(t, c)
	ps := partitions(t, 4)
	f := redisstore.NewFleet(r, ps)
	bs := redisstore.NewBookings(r, 1, ps)
	ctx := context.Background()

	a, ok, err := f.Acquire(ctx, 2, "a", 200*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("Acquire(free) = %v, %v", ok, err)
	}
	if _, ok, err := f.Acquire(ctx, 2, "b", time.Second); err != nil || ok {
		t.Fatalf("Acquire(held) by another = %v, %v; want refused", ok, err)
	}
	if ok, err := f.Renew(ctx, a, 200*time.Millisecond); err != nil || !ok {
		t.Fatalf("Renew(held) = %v, %v", ok, err)
	}

	// A booking due in partition 2.
	now := time.Now()
	var id string
	for i := 0; ; i++ {
		if id = fmt.Sprintf("bk-%d", i); ps.Of(id) == 2 {
			break
		}
	}
	bk := booking.Booking{ID: id, RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
		Status: booking.Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Second), DueAt: now}
	if _, _, err := bs.Create(ctx, bk); err != nil {
		t.Fatal(err)
	}

	// a's lease runs out and b takes it: a's token claims nothing now.
	time.Sleep(300 * time.Millisecond)
	b, ok, err := f.Acquire(ctx, 2, "b", time.Second)
	if err != nil || !ok {
		t.Fatalf("Acquire(expired) = %v, %v", ok, err)
	}
	fa, _ := redisstore.Fence(a.Token)
	fb, _ := redisstore.Fence(b.Token)
	if fb <= fa {
		t.Fatalf("fencing numbers %d then %d: not increasing", fa, fb)
	}
	if ok, _ := f.Renew(ctx, a, time.Second); ok {
		t.Fatal("a renewed a lease b holds")
	}
	ids, err := bs.Claim(ctx, []fleet.Lease{a}, now.Add(time.Second), time.Second, 10)
	if !errors.Is(err, fleet.ErrLeaseLost) || len(ids) != 0 {
		t.Fatalf("Claim with a lost lease = %v, %v; want nothing and ErrLeaseLost", ids, err)
	}
	ids, err = bs.Claim(ctx, []fleet.Lease{b}, now.Add(time.Second), time.Second, 10)
	if err != nil || !slices.Equal(ids, []string{id}) {
		t.Fatalf("Claim with the lease = %v, %v; want [%s]", ids, err, id)
	}
	if err := f.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.Acquire(ctx, 2, "c", time.Second); ok {
		t.Fatal("a's release of a lease it lost freed b's lease")
	}
	if err := f.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.Acquire(ctx, 2, "c", time.Second); !ok {
		t.Fatal("b's release did not free the lease")
	}
}

func TestMembersRunOutUnlessTheyHeartbeat(t *testing.T) {
	c := clustertest.Start(t)
	f := redisstore.NewFleet(newRouterFor(t, c), partitions(t, 4))
	ctx := context.Background()
	now := time.Now()
	for _, hb := range []struct {
		id   string
		for_ time.Duration
	}{{"a", time.Minute}, {"b", 100 * time.Millisecond}, {"c", time.Minute}} {
		if err := f.Heartbeat(ctx, hb.id, now.Add(hb.for_)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Leave(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	got, err := f.Members(ctx, now.Add(time.Second))
	if err != nil || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Members = %v, %v; want [a] (b ran out, c left)", got, err)
	}
}
