package spike

import (
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/sim"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// fate is what became of one rider's request.
type fate struct {
	arr       sim.Arrival
	sent      bool
	bookingID string
	outcome   spampede.Outcome // Spampede's decision, if it was asked
	rejected  bool             // turned away by Spampede
	err       error            // the pipeline could not take it
	settleErr error            // its final state could not be read
	latency   time.Duration    // of the booking call
	status    booking.Status   // at the end of the run
	overdue   bool             // still searching well past its deadline at the end
	allocIn   time.Duration    // request to driver; 0: never
	tripAt    time.Time        // a driver started the trip; zero: never
}

// tally accumulates Counts and their latencies.
type tally struct {
	c                  Counts
	lat, toAlloc, fail []time.Duration
}

func (t *tally) add(f *fate) {
	if !f.sent {
		return
	}
	t.c.Requested++
	switch f.outcome {
	case spampede.ShadowRejected:
		t.c.WouldReject++
	case spampede.FailOpen:
		t.c.FailOpen++
	}
	switch {
	case f.rejected:
		t.c.Rejected++
		return
	case f.err != nil:
		t.c.Failed++
		t.fail = append(t.fail, f.latency)
		return
	}
	t.c.Admitted++
	t.lat = append(t.lat, f.latency)
	switch f.status {
	case booking.Allocated, booking.Accepted:
		t.c.Allocated++
		t.toAlloc = append(t.toAlloc, f.allocIn)
	case booking.Unallocated:
		t.c.Unallocated++
	case booking.Searching:
		t.c.Pending++
	}
}

// merge adds o's riders to t.
func (t *tally) merge(o tally) {
	t.c.Requested += o.c.Requested
	t.c.Admitted += o.c.Admitted
	t.c.Rejected += o.c.Rejected
	t.c.WouldReject += o.c.WouldReject
	t.c.FailOpen += o.c.FailOpen
	t.c.Failed += o.c.Failed
	t.c.Allocated += o.c.Allocated
	t.c.Unallocated += o.c.Unallocated
	t.c.Pending += o.c.Pending
	t.lat = append(t.lat, o.lat...)
	t.toAlloc = append(t.toAlloc, o.toAlloc...)
	t.fail = append(t.fail, o.fail...)
}

func (t *tally) counts() Counts {
	c := t.c
	for _, d := range [][]time.Duration{t.lat, t.toAlloc, t.fail} {
		slices.Sort(d) // each once, for all its quantiles
	}
	c.LatencyP50, c.LatencyP99 = ms(quantile(t.lat, 0.5)), ms(quantile(t.lat, 0.99))
	c.AllocP50, c.AllocP99 = ms(quantile(t.toAlloc, 0.5)), ms(quantile(t.toAlloc, 0.99))
	c.FailedP99 = ms(quantile(t.fail, 0.99))
	return c
}

// quantile is the nearest-rank quantile of sorted samples; 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
