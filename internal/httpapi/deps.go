package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// Drivers is what the API needs from driver storage. It is declared here,
// by its consumer; redisstore's store satisfies it, and tests use a fake.
//
// Errors are matched with errors.Is/As against the redisstore and driver
// sentinels (see errors.go); anything else is reported as internal.
type Drivers interface {
	Get(ctx context.Context, id string) (driver.Driver, error)
	BatchGet(ctx context.Context, ids []string) (redisstore.Batch, error)
	Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error)
	// Apply runs one transition atomically. An empty tr.BookingID means the
	// booking the driver currently holds.
	Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error)
	Nearby(ctx context.Context, q redisstore.NearbyQuery, now time.Time) (redisstore.Nearby, error)
}

// Bookings is what the API needs from the booking pipeline; booking.Service
// satisfies it. Errors are matched against booking.ErrNotFound,
// booking.ErrIllegal, *booking.HighDemandError, driver.ErrInvalidArgument
// and the storage errors (see errors.go).
type Bookings interface {
	// Create runs the pipeline; a retry with the same
	// Request.IdempotencyKey returns the booking the first call made.
	Create(ctx context.Context, req booking.Request) (booking.Booking, error)
	Get(ctx context.Context, id string) (booking.Booking, error)
	// Wait returns the booking when its version differs from seen, or
	// when ctx ends.
	Wait(ctx context.Context, id string, seen int64) (booking.Booking, error)
	Cancel(ctx context.Context, id string) (booking.Booking, error)
}

// bookingsDisabled stands in for a nil Deps.Bookings: the routes stay
// registered and validate their input as usual, then answer 503.
type bookingsDisabled struct{}

func (bookingsDisabled) Create(context.Context, booking.Request) (booking.Booking, error) {
	return booking.Booking{}, errBookingsDisabled
}

func (bookingsDisabled) Get(context.Context, string) (booking.Booking, error) {
	return booking.Booking{}, errBookingsDisabled
}

func (bookingsDisabled) Wait(context.Context, string, int64) (booking.Booking, error) {
	return booking.Booking{}, errBookingsDisabled
}

func (bookingsDisabled) Cancel(context.Context, string) (booking.Booking, error) {
	return booking.Booking{}, errBookingsDisabled
}

// Deps are the collaborators of the public handler.
type Deps struct {
	Drivers Drivers // required
	// Bookings serves /v1/bookings; when nil those routes answer 503
	// unavailable ("bookings are not enabled").
	Bookings Bookings
	Rules    driver.Rules // decides the "available" field of driver responses
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// ClockAhead is how far Now is ahead of time.Now (nil: not at all): an
	// Apollo-Deadline, a time in the clients' clock, is taken in Now's
	// and moved by it onto time.Now, the clock contexts' deadlines are on.
	// Apollo keeps the cluster's time, so a host whose clock is off does
	// not take every client's deadline for past, or far off.
	ClockAhead func() time.Duration
	// Log receives the access log and unexpected errors; discarded when nil.
	Log *slog.Logger
	// Registerer receives the HTTP metrics; none are registered when nil.
	Registerer prometheus.Registerer
	// Stopping, cancelled when the server begins to shut down, ends every
	// long poll at once with the booking as it is, so that a shutdown
	// need not wait out the longest poll. Nil: polls run their course.
	Stopping context.Context
}

// withDefaults fills the optional dependencies and checks the required ones.
func (d Deps) withDefaults() (Deps, error) {
	if d.Drivers == nil {
		return d, errors.New("httpapi: Deps.Drivers is required")
	}
	if err := d.Rules.Validate(); err != nil {
		return d, errors.Join(errors.New("httpapi: Deps.Rules"), err)
	}
	if d.Bookings == nil {
		d.Bookings = bookingsDisabled{}
	}
	if d.ClockAhead == nil {
		d.ClockAhead = func() time.Duration { return 0 }
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return d, nil
}
