package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
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
	if kept, err := f.Renew(ctx, []fleet.Lease{a}, 200*time.Millisecond); err != nil || !kept[0] {
		t.Fatalf("Renew(held) = %v, %v", kept, err)
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
	if kept, _ := f.Renew(ctx, []fleet.Lease{a, b}, time.Second); kept[0] || !kept[1] {
		t.Fatalf("Renew(a's lost lease, b's) = %v, want [false true]", kept)
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
		if err := f.Heartbeat(ctx, hb.id, now, now.Add(hb.for_)); err != nil {
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

// The first instance records the fleet's partition count; one started
// with another count refuses to start rather than file bookings where no
// other instance looks.
func TestAnInstanceWithAnotherPartitionCountIsRefused(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 0 })
	r := newRouterFor(t, c)
	ctx := context.Background()
	if err := redisstore.NewFleet(r, partitions(t, 64)).Agree(ctx); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	if err := redisstore.NewFleet(r, partitions(t, 64)).Agree(ctx); err != nil {
		t.Fatalf("an instance with the same count: %v", err)
	}
	err := redisstore.NewFleet(r, partitions(t, 16)).Agree(ctx)
	if !errors.Is(err, redisstore.ErrPartitionsDiffer) {
		t.Fatalf("an instance with 16 partitions: %v, want ErrPartitionsDiffer", err)
	}
	t.Log(err)
}

// Bookings open in the index of a version before partitions are moved
// into the partitions at start, so an upgrade strands none of them.
func TestTheUnpartitionedIndexOfAnEarlierVersionIsAdopted(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 0 })
	r := newRouterFor(t, c)
	ctx := context.Background()
	ps := partitions(t, 8)
	bs := redisstore.NewBookings(r, 0, ps)
	due := time.Now().Add(-time.Second)
	var ids []string
	for i := range 250 {
		id := fmt.Sprintf("bk-old-%d", i)
		ids = append(ids, id)
		if err := r.Do(ctx, redisroute.Write("ZADD", "apollo:bk:open", due.UnixMilli(), id)).Err; err != nil {
			t.Fatal(err)
		}
	}
	n, err := bs.AdoptLegacyIndex(ctx)
	if err != nil || n != 250 {
		t.Fatalf("AdoptLegacyIndex = %d, %v; want 250", n, err)
	}
	claimed, err := bs.Claim(ctx, fleet.Alone(8).Owned(), time.Now(), time.Second, 1000)
	if err != nil || len(claimed) != 250 {
		t.Fatalf("claimed %d of the 250 adopted bookings (%v)", len(claimed), err)
	}
	if n, err := bs.AdoptLegacyIndex(ctx); err != nil || n != 0 {
		t.Fatalf("a second AdoptLegacyIndex = %d, %v; want nothing left", n, err)
	}
}

// A claim takes no more than its limit, split over the partitions given,
// the first ones taking the remainder: a full queue claims nothing it
// cannot work, and no partition is starved by another's backlog.
func TestAClaimSplitsItsLimitOverThePartitions(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 0 })
	r := newRouterFor(t, c)
	ctx := context.Background()
	ps := partitions(t, 4)
	bs := redisstore.NewBookings(r, 0, ps)
	due := time.Now().Add(-time.Second)
	for i, per := 0, map[int]int{}; len(per) < 4 || per[0] < 10 || per[1] < 10 || per[2] < 10 || per[3] < 10; i++ {
		id := fmt.Sprintf("bk-q-%d", i)
		p := ps.Of(id)
		if per[p] >= 10 {
			continue
		}
		per[p]++
		if err := r.Do(ctx, redisroute.Write("ZADD", ps.OpenKey(p), due.UnixMilli(), id)).Err; err != nil {
			t.Fatal(err)
		}
	}
	leases := fleet.Alone(4).Owned()
	leases = append(leases[2:], leases[:2]...) // partitions 2, 3, 0, 1
	ids, err := bs.Claim(ctx, leases, time.Now(), time.Minute, 6)
	if err != nil || len(ids) != 6 {
		t.Fatalf("Claim(limit 6) = %d bookings, %v", len(ids), err)
	}
	got := map[int]int{}
	for _, id := range ids {
		got[ps.Of(id)]++
	}
	if want := map[int]int{2: 2, 3: 2, 0: 1, 1: 1}; !maps.Equal(got, want) {
		t.Fatalf("claimed per partition %v, want %v", got, want)
	}
}
