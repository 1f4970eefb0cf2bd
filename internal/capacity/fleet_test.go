package capacity

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTwoInstancesDoTheBackgroundWorkOfOne is a short `apollo capacity`:
// with every instance claiming from the whole index, two instances would
// make about twice the allocation attempts of one.
func TestTwoInstancesDoTheBackgroundWorkOfOne(t *testing.T) {
	cfg := DefaultFleetConfig()
	cfg.Instances, cfg.Bookings, cfg.CreateOver, cfg.AllocationTimeout = []int{1, 2}, 60, 2*time.Second, 8*time.Second
	rows, err := Fleet(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	one, two := rows[0], rows[1]
	for _, r := range rows {
		if r.StillOpen != 0 {
			t.Errorf("%d instances: %d bookings still open after their deadline", r.Instances, r.StillOpen)
		}
		if r.BusiestShare > 1.5 {
			t.Errorf("%d instances: the busiest shard took %.2f × the mean share of index commands %v", r.Instances, r.BusiestShare, r.IndexByShard)
		}
	}
	if ratio := two.AttemptsPerBooking / one.AttemptsPerBooking; ratio > 1.2 || ratio < 0.8 {
		t.Errorf("attempts per booking: %.2f with one instance, %.2f with two (%.2f ×): the work is not shared", one.AttemptsPerBooking, two.AttemptsPerBooking, ratio)
	}
	// What the leases save: with every instance claiming from every
	// partition, the claims alone would double.
	if ratio := float64(sum(two.IndexByShard)) / float64(sum(one.IndexByShard)); ratio > 1.25 {
		t.Errorf("open-index commands: %v with one instance, %v with two (%.2f ×): every instance claims from every partition", one.IndexByShard, two.IndexByShard, ratio)
	}
	if ratio := two.CommandsPerBookingSecond / one.CommandsPerBookingSecond; ratio > 1.25 {
		t.Errorf("Redis commands per open booking per second: %.2f with one instance, %.2f with two (%.2f ×)", one.CommandsPerBookingSecond, two.CommandsPerBookingSecond, ratio)
	}
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// The per-operation costs the capacity plan rests on (docs/capacity.md),
// as upper bounds: an operation that grows a round trip fails here first.
func TestWhatEachOperationAsksOfRedis(t *testing.T) {
	cfg := DefaultOpsConfig()
	cfg.Count, cfg.Callers = 100, 4
	rows, err := Ops(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// Executed bounds what Redis runs (0: not bounded): a write or a wait
	// for a replica shows there, replicated and acknowledged.
	bounds := map[string]struct{ sent, trips, executed float64 }{
		"driver heartbeat":              {3, 3, 0},
		"admission decision (Spampede)": {1, 1, 1.5},
		// A storm's hotspot is mostly these: an idempotency lookup and the
		// decision (or the cell already known tripped), reads with nothing
		// to confirm, since nothing is returned.
		"booking turned away (Spampede)": {2, 2, 2},
		"batch read of 20 drivers":       {20, 3.5, 0}, // one pipeline per shard, a few hedged or retried
	}
	for _, r := range rows {
		if r.Sent <= 0 || r.RoundTrips <= 0 || r.Executed < r.Sent {
			t.Errorf("%s: %+v: nothing counted", r.Op, r)
		}
		// The first use of a script on each primary is sent twice
		// (NOSCRIPT, then EVAL): a few commands over the 100 operations.
		const firstUse = 0.15
		b, ok := bounds[r.Op]
		if ok && (r.Sent > b.sent+firstUse || r.RoundTrips > b.trips+firstUse) {
			t.Errorf("%s: %.1f commands in %.1f round trips, want at most %.0f in %.1f", r.Op, r.Sent, r.RoundTrips, b.sent, b.trips)
		}
		if ok && b.executed > 0 && r.Executed > b.executed {
			t.Errorf("%s: Redis executed %.1f commands, want at most %.1f", r.Op, r.Executed, b.executed)
		}
	}
	if len(rows) != 8 {
		t.Errorf("%d operations measured, want 8", len(rows))
	}
}
