package booking

import (
	"testing"
	"time"
)

func TestRetryGapsDoubleUpToTheCapAndStopAtTheDeadline(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	r := newRetries(time.Second, 4*time.Second)
	const id = "bk-1"
	frac := float64(spread(id, time.Second)) / float64(time.Second)
	if frac < 0.75 || frac >= 1.25 {
		t.Fatalf("spread of 1s = %v, want within [0.75s, 1.25s)", spread(id, time.Second))
	}
	now, deadline := t0, t0.Add(30*time.Second)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		r.missed(id, now, deadline)
		gap := time.Duration(frac * float64(want))
		if r.isDue(id, now.Add(gap-time.Millisecond)) {
			t.Errorf("miss %d: due before its gap of %s", i+1, gap)
		}
		if !r.isDue(id, now.Add(gap)) {
			t.Errorf("miss %d: not due after its gap of %s", i+1, gap)
		}
		now = now.Add(gap)
	}
	late := deadline.Add(-100 * time.Millisecond)
	r.missed(id, late, deadline)
	if !r.isDue(id, deadline) {
		t.Error("a retry was scheduled past the booking's deadline")
	}
}

func TestRetriesOfABurstAreSpreadOut(t *testing.T) {
	seen := map[time.Duration]bool{}
	for _, id := range []string{"bk-a", "bk-b", "bk-c", "bk-d", "bk-e", "bk-f", "bk-g", "bk-h"} {
		seen[spread(id, 4*time.Second)/(100*time.Millisecond)] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 bookings retry in only %d distinct 100 ms slots of a 4 s gap", len(seen))
	}
}

func TestForgottenAndUnknownBookingsAreDueAtOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := newRetries(time.Second, 4*time.Second)
	if !r.isDue("never-seen", now) {
		t.Error("a booking with no schedule is not due")
	}
	r.missed("bk-1", now, now.Add(time.Minute))
	r.forget("bk-1")
	if !r.isDue("bk-1", now) {
		t.Error("a forgotten booking is not due")
	}
	r.missed("bk-1", now, now.Add(time.Minute))
	r.missed("bk-1", now, now.Add(time.Minute)) // second gap: 2 s
	r.forget("bk-1")
	r.missed("bk-1", now, now.Add(time.Minute))
	if !r.isDue("bk-1", now.Add(1250*time.Millisecond)) {
		t.Error("after forget, a miss did not start again at the shortest gap")
	}
}

func TestPruneDropsSchedulesLongPastDue(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := newRetries(time.Second, 4*time.Second)
	r.missed("old", now, now.Add(time.Minute))
	r.missed("fresh", now.Add(10*time.Second), now.Add(time.Minute))
	r.prune(now.Add(10*time.Second), 6*time.Second)
	if _, ok := r.due["old"]; ok {
		t.Error("a schedule 9 s past due survived a prune of those over 6 s")
	}
	if _, ok := r.due["fresh"]; !ok {
		t.Error("a schedule not yet due was pruned")
	}
}
