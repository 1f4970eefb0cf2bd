package spampede

import (
	"cmp"
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/geocell"
)

// Outcome is what the filter decided, and why.
type Outcome string

// Outcomes. Only Rejected and RejectedCached turn a booking away.
const (
	NoRule         Outcome = "no_rule"         // no rule covers the pickup
	Admitted       Outcome = "admitted"        // under the threshold
	Rejected       Outcome = "rejected"        // over the threshold: the cell trips
	RejectedCached Outcome = "rejected_cached" // the cell was already tripped: no store read
	ShadowRejected Outcome = "shadow_rejected" // a shadow rule would have rejected; admitted
	FailOpen       Outcome = "fail_open"       // the store was slow or down; admitted
)

// Outcomes lists every outcome (bounded metric labels).
func Outcomes() []Outcome {
	return []Outcome{NoRule, Admitted, Rejected, RejectedCached, ShadowRejected, FailOpen}
}

// Decision is the filter's answer for one booking.
type Decision struct {
	Outcome    Outcome
	Rule       string
	Cell       geocell.Cell
	Count      float64       // the cell's estimated unallocated bookings over the last bucket-length
	RetryAfter time.Duration // when rejected: until the cell's hold-down ends
}

// Admit reports whether the booking may go on.
func (d Decision) Admit() bool { return d.Outcome != Rejected && d.Outcome != RejectedCached }

// Observer is told about every decision; the service's metrics implement it.
type Observer interface {
	Decided(Outcome)
	Tripped()
	RecordFailed()
}

// NopObserver observes nothing.
type NopObserver struct{}

// Decided implements Observer.
func (NopObserver) Decided(Outcome) {}

// Tripped implements Observer.
func (NopObserver) Tripped() {}

// RecordFailed implements Observer.
func (NopObserver) RecordFailed() {}

func sortCells(cs []CellState) {
	slices.SortFunc(cs, func(a, b CellState) int { return cmp.Compare(b.Count, a.Count) })
}
