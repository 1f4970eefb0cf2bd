package redisstore_test

import (
	"context"
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

// A reservation indexed by an earlier version, in the index's one key of
// then, is still found once it lapses: during a rolling upgrade older
// instances go on writing there.
func TestAReservationIndexedByAnEarlierVersionIsStillSwept(t *testing.T) {
	c := clustertest.Start(t)
	s, r := newStore(t, c)
	ctx := context.Background()
	online(t, s, "r-old", 1.30, 103.80, t0, "car")
	until := t0.Add(15 * time.Second)
	if _, err := s.Apply(ctx, "r-old", driver.Transition{Event: driver.EventReserve, BookingID: "bk-old", Until: until}, t0); err != nil {
		t.Fatal(err)
	}
	// Move its entry to where an earlier version put it.
	for s := range 3 {
		cl := c.Primary(ctx, s).Client()
		keys, err := cl.Keys(ctx, "apollo:drv:reserved:*").Result()
		for _, k := range keys {
			if err == nil {
				err = cl.ZRem(ctx, k, "r-old").Err()
			}
		}
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZADD", "apollo:drv:reserved", until.Add(time.Second).UnixMilli(), "r-old")}).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimLapsed(ctx, until.Add(5*time.Second), time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].ID != "r-old" {
		t.Fatalf("ClaimLapsed = %+v, %v; want r-old, indexed in the earlier key", got, err)
	}
}
