package app

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/booking"
)

// bookingMetrics is booking.Metrics on Prometheus.
type bookingMetrics struct {
	outcomes *prometheus.CounterVec
	overrun  prometheus.Histogram
}

func newBookingMetrics(reg prometheus.Registerer) (*bookingMetrics, error) {
	m := &bookingMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_bookings_total",
			Help: "Bookings by outcome: created, turned_away (Spampede), allocated (a driver reserved; a booking whose reservation lapsed can be allocated again), unallocated (deadline passed), cancelled. A change applied but not confirmed by a replica is not counted."}, []string{"outcome"}),
		overrun: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "apollo_booking_deadline_overrun_seconds",
			Help:    "How long after its deadline a booking without a driver was given up: grows when bookings are stuck.",
			Buckets: []float64{.1, .25, .5, 1, 2, 5, 10, 30, 60, 300}}),
	}
	// Every outcome from the start, so a rate over a quiet one is 0, not absent.
	for _, o := range []string{booking.OutcomeCreated, booking.OutcomeTurnedAway, booking.OutcomeAllocated, booking.OutcomeUnallocated, booking.OutcomeCancelled} {
		m.outcomes.WithLabelValues(o)
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.overrun} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *bookingMetrics) Outcome(o string)        { m.outcomes.WithLabelValues(o).Inc() }
func (m *bookingMetrics) Overrun(d time.Duration) { m.overrun.Observe(max(d, 0).Seconds()) }
