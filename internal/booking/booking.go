package booking

import (
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// Status is where a booking is in its life.
type Status string

// Statuses.
const (
	Searching   Status = "searching"   // admitted, looking for a driver
	Allocated   Status = "allocated"   // a driver is reserved for it, waiting for the driver to accept
	Accepted    Status = "accepted"    // the driver accepted
	Unallocated Status = "unallocated" // no driver found before the deadline
	Cancelled   Status = "cancelled"   // the rider cancelled
)

// Open reports whether the workers still have something to do with the
// booking: it searches, or waits for its driver's answer. Only open
// bookings are in the open index.
func (s Status) Open() bool { return s == Searching || s == Allocated }

// Final reports whether no further change can happen. An accepted booking
// is neither open nor final: no worker moves it on, but its driver may
// back out (a decline after the accept), and it then searches again.
func (s Status) Final() bool { return s == Unallocated || s == Cancelled }

// Booking is one ride request.
type Booking struct {
	ID            string          `json:"id"`
	RiderID       string          `json:"rider_id"`
	Service       string          `json:"service"`
	Pickup        driver.Location `json:"pickup"`
	Dropoff       driver.Location `json:"dropoff"`
	Status        Status          `json:"status"`
	DriverID      string          `json:"driver_id,omitempty"`
	ReservedUntil time.Time       `json:"reserved_until,omitzero"`
	// AllocatedAt is when a driver was last reserved for the booking; it
	// stays after the driver accepts, so time to allocation is known.
	AllocatedAt time.Time `json:"allocated_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	Deadline    time.Time `json:"deadline"` // allocation gives up after this
	UpdatedAt   time.Time `json:"updated_at"`
	// DueAt is when the workers should next look at an open booking: its
	// reservation's end, or now for one that searches again. The store
	// schedules it by this time (and a miss reschedules it, see retryGap).
	DueAt   time.Time `json:"due_at,omitzero"`
	Version int64     `json:"version"`
}

// Request is what a rider asks for.
type Request struct {
	RiderID string
	Service string
	Pickup  driver.Location
	Dropoff driver.Location
	// IdempotencyKey makes retries return the same booking.
	IdempotencyKey string
}

// Errors of the pipeline.
var (
	// ErrNotFound: no such booking.
	ErrNotFound = errors.New("booking not found")
	// ErrIllegal: the booking is not in a state that allows the change.
	ErrIllegal = errors.New("illegal booking transition")
	// ErrConflict: the booking changed since it was read (Store.Update's
	// compare-and-set failed): the write did not happen.
	ErrConflict = errors.New("booking changed concurrently")
	// ErrChanging: the booking was changing while a driver's answer was
	// recorded (its allocation still being written, or other updates one
	// after another): what the answer wrote on the driver may stand. Read
	// back, or send it again.
	ErrChanging = errors.New("the booking was changing while the request ran")
	// ErrUnconfirmed: the store applied a write but could not confirm that
	// a replica holds it, so a failover could still undo it.
	ErrUnconfirmed = errors.New("booking write not confirmed by a replica")
	// ErrDriverNotFound: the driver's record does not exist (it expired).
	ErrDriverNotFound = errors.New("driver not found")
	// ErrDriverAccepted: a reservation cannot be released because its
	// driver accepted the booking (or started its trip): the booking holds
	// the driver, whatever the booking record says.
	ErrDriverAccepted = errors.New("the driver accepted the booking")
)

// HighDemandError: Spampede turned the booking away before any downstream call.
type HighDemandError struct {
	RetryAfter time.Duration
	Cell       string
}

func (e *HighDemandError) Error() string {
	return fmt.Sprintf("high demand near the pickup: no drivers can be found right now; retry in %s", e.RetryAfter)
}

// Validate checks a request; errors match driver.ErrInvalidArgument.
func (r Request) Validate() error {
	var errs []error
	if err := driver.ValidateID(r.RiderID); err != nil {
		errs = append(errs, fmt.Errorf("rider_id: %w", err))
	}
	if err := driver.ValidateService(r.Service); err != nil {
		errs = append(errs, err)
	}
	if err := driver.ValidateLocation(r.Pickup.Lat, r.Pickup.Lng); err != nil {
		errs = append(errs, fmt.Errorf("pickup: %w", err))
	}
	if err := driver.ValidateLocation(r.Dropoff.Lat, r.Dropoff.Lng); err != nil {
		errs = append(errs, fmt.Errorf("dropoff: %w", err))
	}
	if k := r.IdempotencyKey; len(k) > 128 {
		errs = append(errs, fmt.Errorf("%w: Idempotency-Key must be at most 128 characters", driver.ErrInvalidArgument))
	}
	return errors.Join(errs...)
}

// transition moves b to `to` if the move is legal.
func transition(b Booking, to Status, now time.Time) (Booking, error) {
	legal := map[Status][]Status{
		Searching: {Allocated, Unallocated, Cancelled},
		Allocated: {Accepted, Searching, Cancelled},
		Accepted:  {Searching}, // its driver backed out
	}
	for _, s := range legal[b.Status] {
		if s == to {
			// The store writes it only if the stored version is still b's.
			b.Status, b.UpdatedAt, b.Version = to, now, b.Version+1
			if to != Allocated && to != Accepted {
				b.DriverID, b.ReservedUntil = "", time.Time{}
			}
			switch {
			case !to.Open():
				b.DueAt = time.Time{}
			case to == Searching:
				b.DueAt = now
			}
			return b, nil
		}
	}
	return b, fmt.Errorf("%w: %s → %s", ErrIllegal, b.Status, to)
}
