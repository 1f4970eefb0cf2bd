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
	"github.com/apollo-platform/apollo/internal/redisroute"
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

// hookedRouter runs after on each Exec's commands and results, before
// Exec returns them.
type hookedRouter struct {
	*redisroute.Router
	after func(cmds []redisroute.Cmd, res redisroute.Results)
}

func (h *hookedRouter) Exec(ctx context.Context, cmds []redisroute.Cmd) redisroute.Results {
	res := h.Router.Exec(ctx, cmds)
	h.after(cmds, res)
	return res
}

// A booking whose record was written just before its create's deadline is
// indexed again after it even though the deadline has passed by then: a
// scan may have forgotten the entry written before the record (it found
// no record yet), and without an entry no worker ever advances the
// booking. Before, the index write went out with the expired deadline:
// it may have landed or not, unanswered (or, when not yet sent, was not
// sent at all).
func TestABookingWrittenAtItsDeadlineIsStillIndexed(t *testing.T) {
	c := clustertest.Start(t)
	ps := partitions(t, 8)
	now := time.Now()
	b := booking.Booking{ID: "bk-late", RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
		Status: booking.Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Second), DueAt: now.Add(10 * time.Second)}
	open := ps.OpenKey(ps.Of(b.ID))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h := &hookedRouter{Router: newRouterFor(t, c)}
	var indexed []error // each index write's outcome
	h.after = func(cmds []redisroute.Cmd, res redisroute.Results) {
		switch {
		case cmds[0].Key == open:
			indexed = append(indexed, res.Err())
			if len(indexed) == 1 && res.Err() == nil {
				// A scan claims the entry and, finding no record yet, forgets it.
				h.Router.Exec(context.Background(), []redisroute.Cmd{redisroute.Write("ZREM", open, b.ID)})
			}
		case res.Err() == nil:
			// The record is written; the deadline passes before Create goes on.
			dl, _ := ctx.Deadline()
			time.Sleep(time.Until(dl) + 10*time.Millisecond)
		}
	}
	s := redisstore.NewBookings(h, 1, ps)
	if _, created, err := s.Create(ctx, b); err != nil || !created {
		t.Fatalf("Create = %v, %v; want created", created, err)
	}
	// Its outcome known: a write sent with an expired deadline may land, or
	// not, and the router cannot tell.
	if len(indexed) != 2 || indexed[1] != nil {
		t.Fatalf("index writes: %v; want two, the one after the record answered", indexed)
	}
	score := h.Router.Exec(context.Background(), []redisroute.Cmd{{Args: []any{"ZSCORE", open, b.ID}, Key: open, Fresh: true}})[0]
	if score.Err != nil || score.Val == nil {
		t.Fatalf("the open index has no entry for the booking (%v, %v): no worker will ever advance it", score.Val, score.Err)
	}
}
