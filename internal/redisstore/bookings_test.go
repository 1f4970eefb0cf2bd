package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

func TestBookingsCreateIsIdempotentAndUpdatesCompareVersions(t *testing.T) {
	c := clustertest.Start(t)
	r := newRouterFor(t, c)
	s := redisstore.NewBookings(r, 1, partitions(t, 8))
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
	// A retry with a shorter deadline writes its index entry before it
	// finds the booking: the entry must not come due sooner, since the
	// first attempt's record could still be landing (a scan that finds no
	// record forgets the entry).
	again := b
	again.RiderID = "someone-else"
	again.DueAt = now.Add(time.Second)
	got, created, err := s.Create(ctx, again)
	if err != nil || created || got.RiderID != "r1" {
		t.Fatalf("second Create = %+v, %v, %v; want the first booking back", got, created, err)
	}
	open := partitions(t, 8).OpenKey(partitions(t, 8).Of(b.ID))
	score := r.Exec(ctx, []redisroute.Cmd{{Args: []any{"ZSCORE", open, b.ID}, Key: open, Fresh: true}})[0]
	if due := fmt.Sprint(score.Val); score.Err != nil || due != strconv.FormatInt(b.Deadline.UnixMilli(), 10) {
		t.Errorf("index entry due at %v (%v) after a retry due sooner; want %d, the first attempt's", score.Val, score.Err, b.Deadline.UnixMilli())
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
// Exec returns them; commands drop refuses fail unsent.
type hookedRouter struct {
	*redisroute.Router
	after func(cmds []redisroute.Cmd, res redisroute.Results)
	drop  func(cmds []redisroute.Cmd) bool
}

var errDropped = errors.New("dropped by the test")

func (h *hookedRouter) Exec(ctx context.Context, cmds []redisroute.Cmd) redisroute.Results {
	if h.drop != nil && h.drop(cmds) {
		res := make(redisroute.Results, len(cmds))
		for i := range res {
			res[i].Err = errDropped
		}
		return res
	}
	res := h.Router.Exec(ctx, cmds)
	if h.after != nil {
		h.after(cmds, res)
	}
	return res
}

// Two creates of one booking ID at once (a rider's retry with the same
// Idempotency-Key), the retry with the shorter deadline: its index entry
// write leaves the entry due when the first attempt's is (ZADD GT). The
// first attempt, unconfirmed, withdraws its record; then the retry's
// record lands and is reported created, and its second indexing, best
// effort, is lost. The withdrawal must not have taken the entry with it:
// it was the retry's too, and nothing else would ever advance the booking
// (a reviewer found it, 2026-12-06: Withdraw removed the entry whose score
// was still its own).
func TestAWithdrawalLeavesTheIndexEntryARetryWrote(t *testing.T) {
	c := clustertest.Start(t)
	ps := partitions(t, 8)
	r := newRouterFor(t, c)
	s := redisstore.NewBookings(r, 1, ps)
	ctx := context.Background()
	now := time.Now()
	first := booking.Booking{ID: "bk-twice", RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
		Status: booking.Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Second), DueAt: now.Add(35 * time.Second)}
	if _, created, err := s.Create(ctx, first); err != nil || !created {
		t.Fatalf("first create = %v, %v", created, err)
	}
	retry := first
	retry.CreatedAt, retry.UpdatedAt, retry.DueAt = now.Add(time.Second), now.Add(time.Second), now.Add(6*time.Second)
	zadds := 0
	h := &hookedRouter{Router: r}
	h.drop = func(cmds []redisroute.Cmd) bool {
		if cmds[0].Args[0] != "ZADD" {
			return false
		}
		zadds++
		return zadds == 2 // the retry's second indexing, after its record
	}
	h.after = func(cmds []redisroute.Cmd, _ redisroute.Results) {
		if cmds[0].Args[0] == "ZADD" && zadds == 1 { // the retry's entry is written: the first withdraws
			if err := s.Withdraw(ctx, first); err != nil {
				t.Errorf("withdraw = %v", err)
			}
		}
	}
	if got, created, err := redisstore.NewBookings(h, 1, ps).Create(ctx, retry); err != nil || !created || !got.CreatedAt.Equal(retry.CreatedAt) {
		t.Fatalf("the retry's create = %+v, %v, %v; want it created after the first was withdrawn", got, created, err)
	}
	open := ps.OpenKey(ps.Of(first.ID))
	score := r.Exec(ctx, []redisroute.Cmd{{Args: []any{"ZSCORE", open, first.ID}, Key: open, Fresh: true}})[0]
	if score.Err != nil || score.Val == nil {
		t.Fatalf("the booking reported created has no index entry (%v, %v): no worker will ever advance it", score.Val, score.Err)
	}
}

// A booking that reopens (accepted, its driver backed out: searching
// again) is in the open index whatever index write is lost: its entry is
// written, confirmed, before its record, and if that fails nothing is.
// Before (2026-12-06, a reviewer found it), the entry came only after the
// record, best effort, and an accepted booking has none: one lost write
// and the booking searched for ever, answered 200, with nothing to
// advance it.
func TestABookingThatReopensIsIndexedBeforeItsRecordChanges(t *testing.T) {
	h, s, b, open := newIndexedBooking(t, "bk-reopen")
	ctx, now := context.Background(), b.CreatedAt
	indexed := func() bool { _, ok := entryScore(t, h, open, b.ID); return ok }
	cur, _, err := s.Create(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []booking.Status{booking.Allocated, booking.Accepted} {
		next := cur
		next.Status, next.DriverID, next.ReservedUntil = st, "d1", now.Add(15*time.Second)
		if err := s.Update(ctx, cur, next); err != nil {
			t.Fatal(err)
		}
		cur, _ = s.Get(ctx, b.ID)
	}
	if indexed() {
		t.Fatal("an accepted booking is in the open index")
	}
	reopened := cur
	reopened.Status, reopened.DriverID, reopened.ReservedUntil, reopened.DueAt = booking.Searching, "", time.Time{}, now.Add(10*time.Second)
	zadds := 0
	for _, lost := range []int{1, 2} { // every index write lost; then only the one after the record
		zadds = 0
		h.drop = func(cmds []redisroute.Cmd) bool {
			if cmds[0].Key != open || cmds[0].Args[0] != "ZADD" {
				return false
			}
			zadds++
			return zadds >= lost
		}
		err := s.Update(ctx, cur, reopened)
		got, gerr := s.Get(ctx, b.ID)
		switch {
		case gerr != nil:
			t.Fatal(gerr)
		case got.Status == booking.Searching && !indexed():
			t.Fatalf("index writes lost from number %d on: the booking is searching again (Update = %v) and not in the open index: no worker will advance it", lost, err)
		case lost == 1 && (err == nil || got.Version != cur.Version):
			t.Errorf("with its entry unwritten, Update = %v and the booking is %s at version %d; want an error and nothing written", err, got.Status, got.Version)
		case lost == 2 && err != nil:
			t.Errorf("Update = %v with only the index write after the record lost; want done", err)
		}
	}
}

// Removals from the open index sent late, by an instance paused between a
// booking's record and its index write, or between a worker's read and its
// Forget, must not take away the entry of the booking reopened since (its
// driver backed out): nothing would index it again, and it would search
// for ever. The accept's removal is held here and sent once the booking
// has reopened (a reviewer's finding: a plain ZREM, it removed the
// reopened booking's entry); a Forget at the score a claim gave the entry
// before the reopen leaves it too, and one at its current score removes it.
func TestALateRemovalFromTheOpenIndexLeavesAReopenedBooking(t *testing.T) {
	h, s, b, open := newIndexedBooking(t, "bk-late-removal")
	ctx, now := context.Background(), b.CreatedAt
	score := func() (float64, bool) { return entryScore(t, h, open, b.ID) }
	cur, _, err := s.Create(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	allocated := cur
	allocated.Status, allocated.DriverID, allocated.ReservedUntil, allocated.DueAt = booking.Allocated, "d1", now.Add(15*time.Second), now.Add(15*time.Second)
	if err := s.Update(ctx, cur, allocated); err != nil {
		t.Fatal(err)
	}
	cur, _ = s.Get(ctx, b.ID)
	// The accept: its record lands, its index write is held.
	var held []redisroute.Cmd
	h.drop = func(cmds []redisroute.Cmd) bool {
		if cmds[0].Key != open || held != nil {
			return false
		}
		held = cmds
		return true
	}
	accepted := cur
	accepted.Status = booking.Accepted
	if err := s.Update(ctx, cur, accepted); err != nil {
		t.Fatal(err)
	}
	h.drop = nil
	if held == nil {
		t.Fatal("the accept wrote no index entry to hold")
	}
	cur, _ = s.Get(ctx, b.ID)
	// The driver backs out: the booking reopens, due in 10 s.
	reopened := cur
	reopened.Status, reopened.DriverID, reopened.ReservedUntil, reopened.DueAt = booking.Searching, "", time.Time{}, now.Add(10*time.Second)
	if err := s.Update(ctx, cur, reopened); err != nil {
		t.Fatal(err)
	}
	if _, ok := score(); !ok {
		t.Fatal("the reopened booking is not indexed")
	}
	// The paused instance resumes. Its removal is a script run by SHA:
	// loaded first on the entry's shard, as an instance that has run it
	// before has it, so that the replay runs rather than meeting NOSCRIPT
	// (by a Forget of this booking at a score its entry cannot have).
	if err := s.Forget(ctx, b.ID, time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	for _, res := range h.Router.Exec(ctx, held) {
		if res.Err != nil {
			t.Fatalf("the held removal, sent late: %v", res.Err)
		}
	}
	due, ok := score()
	if !ok {
		t.Fatal("the accept's removal, landing after the booking reopened, took its entry away: no worker will ever advance it")
	}
	// A claim before the reopen gave the entry another score.
	if err := s.Forget(ctx, b.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, ok := score(); !ok {
		t.Fatal("a Forget at a score the entry no longer has removed it")
	}
	if err := s.Forget(ctx, b.ID, time.UnixMilli(int64(due))); err != nil {
		t.Fatal(err)
	}
	if _, ok := score(); ok {
		t.Fatal("a Forget at the entry's score left it")
	}
}

// newIndexedBooking is a booking store on a fresh cluster behind a
// hookable router, a new searching booking of id (not yet created) due
// now, and its partition's open-index key.
func newIndexedBooking(t *testing.T, id string) (*hookedRouter, *redisstore.Bookings, booking.Booking, string) {
	t.Helper()
	c := clustertest.Start(t)
	ps := partitions(t, 8)
	h := &hookedRouter{Router: newRouterFor(t, c)}
	now := time.Now()
	b := booking.Booking{ID: id, RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
		Status: booking.Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Second), DueAt: now}
	return h, redisstore.NewBookings(h, 1, ps), b, ps.OpenKey(ps.Of(id))
}

// entryScore is id's score in the open index at key, read from its
// primary, and whether it has one.
func entryScore(t *testing.T, h *hookedRouter, key, id string) (float64, bool) {
	t.Helper()
	res := h.Router.Exec(context.Background(), []redisroute.Cmd{{Args: []any{"ZSCORE", key, id}, Key: key, Fresh: true}})[0]
	if res.Err != nil && !errors.Is(res.Err, redis.Nil) {
		t.Fatal(res.Err)
	}
	if res.Val == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(fmt.Sprint(res.Val), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f, true
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
