package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Every reservation can be found after it lapses, whatever became of its
// booking: the index is written before the reservation, and it forgets a
// driver only once the driver is no longer reserved.
func TestLapsedReservationsCanBeFoundAndTheIndexTidiesItself(t *testing.T) {
	c := clustertest.Start(t)
	s, _ := newStore(t, c)
	ctx := context.Background()
	for _, id := range []string{"r-lapsed", "r-freed", "r-live"} {
		online(t, s, id, 1.30, 103.80, t0, "car")
	}
	reserve := func(id string, until time.Time) {
		t.Helper()
		if _, err := s.Apply(ctx, id, driver.Transition{Event: driver.EventReserve, BookingID: "bk-" + id, Until: until}, t0); err != nil {
			t.Fatalf("reserve %s: %v", id, err)
		}
	}
	reserve("r-lapsed", t0.Add(15*time.Second))
	reserve("r-freed", t0.Add(15*time.Second))
	reserve("r-live", t0.Add(time.Hour))
	if _, err := s.Apply(ctx, "r-freed", driver.Transition{Event: driver.EventDecline, BookingID: "bk-r-freed"}, t0); err != nil {
		t.Fatal(err)
	}
	idx, err := s.ReservedIndex(ctx)
	if err != nil || len(idx) != 3 {
		t.Fatalf("index = %v, %v; want the three reserved drivers", idx, err)
	}

	if got, err := s.ClaimLapsed(ctx, t0.Add(10*time.Second), time.Minute, 10); err != nil || len(got) != 0 {
		t.Fatalf("before any reservation's end: %v, %v; want none", got, err)
	}
	now := t0.Add(20 * time.Second)
	got, err := s.ClaimLapsed(ctx, now, time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].ID != "r-lapsed" || got[0].BookingID != "bk-r-lapsed" {
		t.Fatalf("ClaimLapsed = %+v, %v; want r-lapsed with its booking", got, err)
	}
	idx, _ = s.ReservedIndex(ctx)
	if _, ok := idx["r-freed"]; ok {
		t.Errorf("the index still holds r-freed, which is no longer reserved: %v", idx)
	}
	if again, _ := s.ClaimLapsed(ctx, now, time.Minute, 10); len(again) != 0 {
		t.Errorf("claimed again within its hold: %+v", again)
	}
	// A new reservation after the claim keeps its entry through the claim's tidy-up.
	if _, err := s.Apply(ctx, "r-lapsed", driver.Transition{Event: driver.EventExpire, BookingID: "bk-r-lapsed"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, "r-lapsed", driver.Transition{Event: driver.EventReserve, BookingID: "bk-2", Until: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ClaimLapsed(ctx, now.Add(2*time.Minute), time.Minute, 10); len(got) != 0 {
		t.Errorf("ClaimLapsed after a new reservation = %+v, want none lapsed", got)
	}
	if idx, _ := s.ReservedIndex(ctx); idx["r-lapsed"].IsZero() || idx["r-live"].IsZero() {
		t.Errorf("index = %v, want r-lapsed (reserved again) and r-live kept", idx)
	}
}

// Reservations indexed by an earlier version, in the index's one key of
// then, are still found once they lapse: during a rolling upgrade older
// instances go on writing there. Eight in that one key are more than its
// share of a sweep of ten over 33 keys, and are all found in one sweep,
// from what the other keys left of it.
func TestAReservationIndexedByAnEarlierVersionIsStillSwept(t *testing.T) {
	c := clustertest.Start(t)
	s, r := newStore(t, c)
	ctx := context.Background()
	until := t0.Add(15 * time.Second)
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("r-old-%d", i)
		ids = append(ids, id)
		online(t, s, id, 1.30, 103.80, t0, "car")
		if _, err := s.Apply(ctx, id, driver.Transition{Event: driver.EventReserve, BookingID: "bk-" + id, Until: until}, t0); err != nil {
			t.Fatal(err)
		}
	}
	// Move their entries to where an earlier version put them.
	for sh := range 3 {
		cl := c.Primary(ctx, sh).Client()
		keys, err := cl.Keys(ctx, "apollo:drv:reserved:*").Result()
		for _, k := range keys {
			if err == nil {
				err = cl.Del(ctx, k).Err()
			}
		}
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZADD", "apollo:drv:reserved", until.Add(time.Second).UnixMilli(), id)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ClaimLapsed(ctx, until.Add(5*time.Second), time.Minute, 10)
	var found []string
	for _, d := range got {
		found = append(found, d.ID)
	}
	slices.Sort(found)
	if err != nil || !slices.Equal(found, ids) {
		t.Fatalf("ClaimLapsed = %v, %v; want %v, indexed in the earlier key", found, err, ids)
	}
}
