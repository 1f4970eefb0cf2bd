package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// The adapters below connect the domain's small interfaces to the driver
// store. They live here, in the composition root, so that neither side
// imports the other.

// finder is dispatch.Finder over the driver store's nearby search. A
// search that could not read part of what it looked at returns the drivers
// it found with the failure, as dispatch.Finder asks.
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
	return out, res.Incomplete()
}

// reserver is dispatch.Reserver and booking.Drivers over the driver store.
type reserver struct{ drivers *redisstore.Drivers }

func (r reserver) Reserve(ctx context.Context, driverID, bookingID string, until, now time.Time) error {
	_, err := r.drivers.Apply(ctx, driverID, driver.Transition{Event: driver.EventReserve, BookingID: bookingID, Until: until}, now)
	if errors.Is(err, redisstore.ErrConflict) || errors.Is(err, redisstore.ErrNotFound) {
		return dispatch.ErrTaken
	}
	return err
}

// Release frees a driver reserved for a booking: expire when the driver let
// the reservation lapse, decline otherwise (cancelled, or a lost update). A
// driver that moved on from the booking (or from the reservation until
// names), or whose record is gone, is released already; an expiry of a
// reservation the driver accepted, or a release of a driver on its trip,
// is refused (booking.ErrDriverAccepted): the booking holds it.
func (r reserver) Release(ctx context.Context, driverID, bookingID string, until time.Time, expired bool, now time.Time) error {
	ev := driver.EventDecline
	if expired {
		ev = driver.EventExpire
	}
	d, err := r.drivers.Apply(ctx, driverID, driver.Transition{Event: ev, BookingID: bookingID, Until: until}, now)
	switch {
	case errors.Is(err, driver.ErrIllegalTransition), errors.Is(err, driver.ErrWrongBooking):
		if d.BookingID == bookingID && (d.Status == driver.StatusOnTrip || d.Status == driver.StatusReserved && d.Accepted) {
			return booking.ErrDriverAccepted
		}
		return nil
	case errors.Is(err, redisstore.ErrNotFound):
		return nil
	}
	return err
}

// Get reads a driver from its primary: the pipeline decides on it.
func (r reserver) Get(ctx context.Context, id string) (driver.Driver, error) {
	d, err := r.drivers.GetFresh(ctx, id)
	if errors.Is(err, redisstore.ErrNotFound) {
		return d, fmt.Errorf("%w: %w", booking.ErrDriverNotFound, err)
	}
	return d, err
}

func (r reserver) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	return r.drivers.Apply(ctx, id, tr, now)
}

// DriversWithBookings is the driver store as drivers' apps see it (the
// HTTP API, and simulated fleets): a driver's accept or decline also moves
// the booking the driver was reserved for (booking.Service.Respond), and a
// trip starts only once its booking is accepted (booking.Service.StartTrip).
type DriversWithBookings struct {
	*redisstore.Drivers
	bookings *booking.Service
}

func (d DriversWithBookings) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	switch tr.Event {
	case driver.EventAccept, driver.EventDecline:
		return d.bookings.Respond(ctx, id, tr.BookingID, tr.Until, tr.Event == driver.EventAccept)
	case driver.EventStartTrip:
		return d.bookings.StartTrip(ctx, id, tr.BookingID)
	}
	return d.Drivers.Apply(ctx, id, tr, now)
}
