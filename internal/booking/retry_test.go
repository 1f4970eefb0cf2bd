package booking

import (
	"testing"
	"time"
)

func TestRetryGapsDoubleUpToTheCapAndStopAtTheDeadline(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	b := Booking{ID: "bk-1", CreatedAt: t0, Deadline: t0.Add(30 * time.Second)}
	frac := float64(spread(b.ID, time.Second)) / float64(time.Second)
	if frac < 0.75 || frac >= 1.25 {
		t.Fatalf("spread of 1s = %v, want within [0.75s, 1.25s)", spread(b.ID, time.Second))
	}
	now := t0
	// The first attempt is made at creation; each miss is retried after a
	// gap twice the time searched so far, from 1 s up to 4 s.
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		at := retryGap(b, now, time.Second, 4*time.Second)
		if got, lo, hi := at.Sub(now), time.Duration(0.75*float64(want)), time.Duration(1.25*float64(want)); got < lo || got >= hi {
			t.Errorf("miss %d at +%s: retried after %s, want %s ± 25 %%", i+1, now.Sub(t0), got, want)
		}
		// A gap of about want: the next miss happens then (exactly want
		// for this check, so the doubling is seen without the spread).
		now = now.Add(want)
	}
	late := b.Deadline.Add(-100 * time.Millisecond)
	if at := retryGap(b, late, time.Second, 4*time.Second); at.After(b.Deadline) {
		t.Errorf("a retry was scheduled at %s, past the booking's deadline", at.Sub(t0))
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
