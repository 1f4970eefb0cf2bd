package app

import (
	"context"
	"errors"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// The adapters below connect the domain's small interfaces to the driver
// store. They live here, in the composition root, so that neither side
// imports the other.

// finder is dispatch.Finder over the driver store's nearby search.
type finder struct{ drivers *redisstore.Drivers }

func (f finder) Find(ctx context.Context, service string, at driver.Location, radiusM float64, limit int, now time.Time) ([]dispatch.Candidate, error) {
	res, err := f.drivers.Nearby(ctx, redisstore.NearbyQuery{Lat: at.Lat, Lng: at.Lng, RadiusM: radiusM, Service: service, Limit: limit}, now)
	if err != nil {
		return nil, err
	}
	out := make([]dispatch.Candidate, len(res.Drivers))
	for i, d := range res.Drivers {
		out[i] = dispatch.Candidate{DriverID: d.Driver.ID, DistanceM: d.DistanceM}
	}
	return out, nil
}

// reserver is dispatch.Reserver over the driver state machine.
type reserver struct{ drivers *redisstore.Drivers }

func (r reserver) Reserve(ctx context.Context, driverID, bookingID string, until, now time.Time) error {
	_, err := r.drivers.Apply(ctx, driverID, driver.Transition{Event: driver.EventReserve, BookingID: bookingID, Until: until}, now)
	if errors.Is(err, redisstore.ErrConflict) || errors.Is(err, redisstore.ErrNotFound) {
		return dispatch.ErrTaken
	}
	return err
}

// Release frees a driver reserved for a booking: expire when the driver let
// the reservation lapse, decline otherwise (cancelled, or lost update).
func (r reserver) Release(ctx context.Context, driverID, bookingID string, expired bool, now time.Time) error {
	ev := driver.EventDecline
	if expired {
		ev = driver.EventExpire
	}
	_, err := r.drivers.Apply(ctx, driverID, driver.Transition{Event: ev, BookingID: bookingID}, now)
	if errors.Is(err, driver.ErrIllegalTransition) || errors.Is(err, driver.ErrWrongBooking) {
		return nil // the driver already moved on from this booking
	}
	return err
}

// DriversWithBookings is the driver store as drivers' apps see it (the
// HTTP API, and simulated fleets): a driver's accept or decline also moves
// the booking the driver was reserved for.
type DriversWithBookings struct {
	*redisstore.Drivers
	bookings *booking.Service
}

func (d DriversWithBookings) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	if tr.Event != driver.EventAccept && tr.Event != driver.EventDecline {
		return d.Drivers.Apply(ctx, id, tr, now)
	}
	bookingID := tr.BookingID
	if bookingID == "" {
		before, err := d.Drivers.Get(ctx, id)
		if err != nil {
			return before, err
		}
		bookingID = before.BookingID
	}
	tr.BookingID = bookingID
	next, err := d.Drivers.Apply(ctx, id, tr, now)
	if err != nil {
		return next, err
	}
	// The driver's answer is recorded; the booking follows. If that fails,
	// the workers reconcile it (an expired reservation returns it to search).
	_ = d.bookings.DriverResponded(ctx, bookingID, id, tr.Event == driver.EventAccept)
	return next, nil
}
