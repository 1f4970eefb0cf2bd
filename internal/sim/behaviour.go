package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// Behaviour is how simulated drivers work: they learn of a reservation on
// their next heartbeat (as a driver's app polling would), accept it with
// AcceptProb or decline, start the trip on the heartbeat after accepting
// (the pickup), end it TripDuration later at the drop-off, and go off and
// on line now and then.
type Behaviour struct {
	AcceptProb   float64
	TripDuration time.Duration
	// ChurnProb is the chance, per heartbeat, that an idle driver goes off
	// line, and that an off-line one comes back.
	ChurnProb float64
	// Trips tells a driver where its booking's rider is and goes; a booking
	// it does not know is driven in place.
	Trips func(bookingID string) (pickup, dropoff driver.Location, ok bool)
	// OnEvent, if set, hears every transition a driver makes.
	OnEvent func(driverID string, ev driver.Event, bookingID string)
}

// Validate reports impossible behaviour.
func (b Behaviour) Validate() error {
	if b.AcceptProb < 0 || b.AcceptProb > 1 || b.ChurnProb < 0 || b.ChurnProb > 1 {
		return errors.New("accept and churn probabilities must be within [0, 1]")
	}
	if b.TripDuration <= 0 {
		return errors.New("trip duration must be positive")
	}
	return nil
}

// driverState is what a simulated driver remembers between heartbeats.
type driverState struct {
	tripEnds time.Time
	dropoff  driver.Location
}

// behave acts on what the heartbeat said about driver i.
func (f *Fleet) behave(ctx context.Context, i int, d driver.Driver, now func() time.Time) error {
	b, st := f.cfg.Behaviour, &f.state[i]
	apply := func(ev driver.Event, tr driver.Transition) error {
		tr.Event = ev
		_, err := f.api.Apply(ctx, ID(i), tr, now())
		if errors.Is(err, driver.ErrIllegalTransition) {
			return nil // the booking moved on (expired, cancelled) between heartbeat and answer
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", ID(i), ev, err)
		}
		if b.OnEvent != nil {
			b.OnEvent(ID(i), ev, tr.BookingID)
		}
		return nil
	}
	switch {
	case d.Status == driver.StatusReserved && d.Withdrawn: // backing out: freed in a moment
	case d.Status == driver.StatusReserved && !d.Accepted:
		if f.rng.Float64() < b.AcceptProb {
			return apply(driver.EventAccept, driver.Transition{BookingID: d.BookingID})
		}
		return apply(driver.EventDecline, driver.Transition{BookingID: d.BookingID})
	case d.Status == driver.StatusReserved && d.Accepted:
		pickup, dropoff, ok := driver.Location{}, driver.Location{}, false
		if b.Trips != nil {
			pickup, dropoff, ok = b.Trips(d.BookingID)
		}
		if !ok {
			pickup, dropoff = f.locs[i], f.locs[i]
		}
		f.locs[i], st.dropoff, st.tripEnds = pickup, dropoff, now().Add(b.TripDuration)
		return apply(driver.EventStartTrip, driver.Transition{BookingID: d.BookingID})
	case d.Status == driver.StatusOnTrip && !now().Before(st.tripEnds):
		f.locs[i] = st.dropoff
		return apply(driver.EventEndTrip, driver.Transition{BookingID: d.BookingID})
	case d.Status == driver.StatusAvailable && f.rng.Float64() < b.ChurnProb:
		return apply(driver.EventGoOffline, driver.Transition{})
	case d.Status == driver.StatusOffline && f.rng.Float64() < b.ChurnProb:
		return apply(driver.EventGoOnline, driver.Transition{Services: f.services(i)})
	}
	return nil
}
