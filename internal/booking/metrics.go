package booking

import "time"

// Metrics hears what becomes of bookings, for monitoring. It is declared
// here and implemented by the composition root, so the pipeline stays free
// of any metrics library.
type Metrics interface {
	// Outcome counts a booking reaching an outcome: created (stored and
	// reported created), turned_away (by Spampede), allocated (a driver
	// reserved), unallocated (its deadline passed), cancelled.
	Outcome(outcome string)
	// Overrun observes how long after its deadline a booking that found
	// no driver was given up: near zero while the workers keep up, and
	// growing when bookings are stuck (workers behind, partitions without
	// an owner).
	Overrun(d time.Duration)
}

// The outcomes Metrics.Outcome counts.
const (
	OutcomeCreated     = "created"
	OutcomeTurnedAway  = "turned_away"
	OutcomeAllocated   = "allocated"
	OutcomeUnallocated = "unallocated"
	OutcomeCancelled   = "cancelled"
)

type noMetrics struct{}

func (noMetrics) Outcome(string)        {}
func (noMetrics) Overrun(time.Duration) {}
