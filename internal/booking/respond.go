package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// casAttempts bounds the read-and-update rounds of a booking that keeps
// changing under a driver's answer.
const casAttempts = 5

// Respond records a driver's answer to the booking it is reserved for
// (bookingID "" means the driver's current booking) and moves the booking
// on. Either way, no second booking can take the driver while this one
// still names it:
//
//   - accept: the driver's record first (it checks the reservation is still
//     this booking's and has not lapsed, and is written before it lapses
//     or never: beforeLapse), then the booking becomes accepted. If that
//     second step fails, the driver's app may send the accept again (an
//     accept already recorded is taken as done), and if it never does,
//     the workers settle the booking as accepted when they find the
//     reservation's driver has accepted (ErrDriverAccepted).
//   - decline: the booking lets go of the driver first (back to searching),
//     then the driver becomes available. If the second step fails, the
//     driver stays reserved for a booking that no longer holds it, until
//     the sweep frees it after the reservation's end. A driver who accepted
//     may still back out until its trip starts (once its reservation has
//     lapsed the trip cannot start, so the decline is its only way out):
//     its accept is withdrawn first (driver.EventBackOut), so that no trip
//     of the same driver can start while the booking lets go, then the
//     accepted booking searches again, for another driver, or to be given
//     up at once if its deadline has passed. If the instance stops after
//     the first step, the driver's app sending the decline again, or the
//     sweep once the reservation lapses, finishes the back-out.
//
// until, when not zero, names the reservation answered (the driver's
// reserved_until as the app showed it): an answer meant for an earlier
// reservation of the same booking is refused (driver.ErrWrongReservation)
// rather than taken for the driver's answer to a later one it never saw,
// as a decline retried after a lost answer would be once dispatch had
// reserved the same driver for the booking again.
func (s *Service) Respond(ctx context.Context, driverID, bookingID string, until time.Time, accept bool) (driver.Driver, error) {
	d, err := s.driver.Get(ctx, driverID)
	if err != nil {
		return d, err
	}
	if bookingID == "" {
		bookingID = d.BookingID
	}
	now := s.now()
	tr := driver.Transition{Event: driver.EventDecline, BookingID: bookingID, Until: until}
	if accept {
		tr.Event = driver.EventAccept
		actx, cancel := s.beforeLapse(ctx, d, bookingID, now)
		next, err := s.driver.Apply(actx, driverID, tr, now)
		cancel()
		// Only the state machine's refusal, judged on the state it was
		// decided on (a withdrawn reservation is refused), can be an accept
		// sent again, whose booking must follow; a store's error (a zero
		// driver, or a refusal whose confirmation failed) is the answer:
		// the accept's outcome is unknown.
		if err != nil && (next.ID == "" || !errors.Is(err, driver.ErrIllegalTransition) || !acceptedAlready(next, bookingID)) {
			return next, err
		}
		return next, s.follow(ctx, bookingID, driverID, Accepted, time.Time{}, false)
	}
	if tr.Until.IsZero() && d.Status == driver.StatusReserved && d.BookingID == bookingID {
		// The reservation the driver answers: a decline held up after the
		// booking let go must not end the booking's next reservation of
		// the same driver, which a worker may have made meanwhile.
		tr.Until = d.ReservedUntil
	}
	// What the decline would do, checked before anything is written.
	if _, err := driver.Apply(d, tr, now); err != nil {
		return d, err
	}
	if d.Status == driver.StatusReserved && acceptedAlready(d, bookingID) {
		// Backing out: the accept is withdrawn for good first, so that no
		// start_trip (or accept sent again) of the same driver, from an app
		// that gave up on this decline or sends both at once, can start a
		// trip whose booking is letting go.
		next, err := s.driver.Apply(ctx, driverID, driver.Transition{Event: driver.EventBackOut, BookingID: bookingID, Until: tr.Until}, now)
		if err != nil && !withdrawnFrom(next, bookingID, tr.Until) {
			return next, asDecline(err)
		}
		d = next // withdrawn: by this decline, or by another of the same answer
	}
	// Only a withdrawn accept lets an accepted booking go: a decline that
	// read the driver before its accept landed must not reopen a booking
	// whose trip may be starting (follow answers ErrChanging instead).
	reopen := withdrawnFrom(d, bookingID, tr.Until)
	if _, ok := ctx.Deadline(); !ok {
		// Bounded, so that a booking the decline reopens is due then (follow).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ClaimHold)
		defer cancel()
	}
	if err := s.follow(ctx, bookingID, driverID, Searching, tr.Until, reopen); err != nil && !errors.Is(err, ErrIllegal) {
		return d, err
	}
	next, err := s.driver.Apply(ctx, driverID, tr, now)
	if err == nil {
		s.enqueue(queued{id: bookingID}) // another driver may be free now: no waiting
	}
	return next, err
}

// beforeLapse bounds an accept of the driver's reservation for bookingID
// by the reservation's end, as an allocation's update is (the store's
// deadline guard: it lands by then or never). The accept is checked
// against the reservation's end when it is decided; written after it (an
// instance held up in between), it would land after a worker read the
// driver not accepted and put the booking back to searching: applied,
// and yet answered refused, its booking gone. A reservation already over
// is not bounded: the driver state machine refuses the accept, confirmed.
func (s *Service) beforeLapse(ctx context.Context, d driver.Driver, bookingID string, now time.Time) (context.Context, context.CancelFunc) {
	left := d.ReservedUntil.Sub(now)
	if d.Status != driver.StatusReserved || d.BookingID != bookingID || left <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, left)
}

// withdrawnFrom reports d withdrawn from its reservation for bookingID
// ending at until: backing out of it.
func withdrawnFrom(d driver.Driver, bookingID string, until time.Time) bool {
	return d.Status == driver.StatusReserved && d.BookingID == bookingID && d.Withdrawn && driver.SameReservationEnd(d.ReservedUntil, until)
}

// asDecline words a refused back-out as the decline the driver sent.
func asDecline(err error) error {
	var te *driver.TransitionError
	if !errors.As(err, &te) || te.Event != driver.EventBackOut {
		return err
	}
	declined := *te
	declined.Event = driver.EventDecline
	return &declined
}

// acceptedAlready reports a driver who accepted bookingID already (and may
// have started the trip).
func acceptedAlready(d driver.Driver, bookingID string) bool {
	if bookingID == "" || d.BookingID != bookingID {
		return false
	}
	return d.Status == driver.StatusOnTrip || d.Status == driver.StatusReserved && d.Accepted
}

// follow moves booking id, allocated to driverID, to `to` (accepted or
// searching; an accepted one, to searching), re-reading it if it changes
// meanwhile. A booking already there is left as it is; one that does not
// hold the driver is ErrIllegal, and so is one holding it under another
// reservation than the one ending at until (when set): a decline held up
// until the driver was reserved for the booking again, and accepted it
// again, must not undo that. An accepted booking goes back to searching
// only with reopen (its driver's accept withdrawn); without, it is
// ErrChanging: the driver accepted after the caller read it. A booking
// still searching when the driver accepted it is ErrChanging too: the
// allocation's update naming the driver may be in flight, and the accept,
// recorded on the driver, then stands.
func (s *Service) follow(ctx context.Context, id, driverID string, to Status, until time.Time, reopen bool) error {
	for range casAttempts {
		b, err := s.store.Get(ctx, id)
		if err != nil {
			return err
		}
		if b.Status == to && to == Accepted && b.DriverID == driverID {
			return nil
		}
		if b.Status == Searching && to == Accepted {
			return fmt.Errorf("%w: booking %s does not name driver %s yet", ErrChanging, b.ID, driverID)
		}
		if b.Status == Searching && to == Searching {
			// The driver is reserved for this booking, which does not name
			// it yet: the update that will (the allocation's, right after
			// its reservation) may be in flight. A write of the booking
			// makes that update's compare-and-set fail, so it releases the
			// driver instead of naming a driver who declined — and who
			// another booking may reserve the moment it is free.
			next := b
			next.UpdatedAt, next.DueAt = s.now(), s.now()
			if err := s.store.Update(ctx, b, next); !errors.Is(err, ErrConflict) {
				return err
			}
			continue
		}
		if !answerable(b, to) || b.DriverID != driverID {
			return fmt.Errorf("%w: booking %s is %s with driver %q", ErrIllegal, b.ID, b.Status, b.DriverID)
		}
		if !until.IsZero() && !driver.SameReservationEnd(until, b.ReservedUntil) {
			return fmt.Errorf("%w: booking %s holds driver %s under a later reservation", ErrIllegal, b.ID, driverID)
		}
		if b.Status == Accepted && to == Searching && !reopen {
			return fmt.Errorf("%w: driver %s accepted booking %s meanwhile: send the decline again", ErrChanging, driverID, b.ID)
		}
		next, err := transition(b, to, s.now())
		if err != nil {
			return err
		}
		if !b.Status.Open() {
			// Reopened (its driver backed out): the store indexes it before
			// it writes the record, as a new booking, so it is due once the
			// write has landed or never will (see Store.Update); the decline
			// queues it at once.
			next.DueAt = next.UpdatedAt.Add(timeLeft(ctx) + s.cfg.ClaimHold)
		}
		if err := s.store.Update(ctx, b, next); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w: booking %s changed %d times in a row", ErrChanging, id, casAttempts)
}

// answerable reports whether b is in a status a driver's answer moves
// to `to`: allocated, or, for a driver backing out, accepted.
func answerable(b Booking, to Status) bool {
	return b.Status == Allocated || b.Status == Accepted && to == Searching
}

// StartTrip records that a driver picked up the rider of the booking it
// accepted (bookingID "" means the driver's current booking). The booking
// is made to follow the accept first: once the driver leaves "reserved",
// only the booking's own record says it holds the driver, and a booking
// still allocated would, at its reservation's end, find the driver gone,
// search again and take a second driver. So a trip cannot start while the
// booking cannot be brought to accepted; the driver's app tries again.
func (s *Service) StartTrip(ctx context.Context, driverID, bookingID string) (driver.Driver, error) {
	d, err := s.driver.Get(ctx, driverID)
	if err != nil {
		return d, err
	}
	if bookingID == "" {
		bookingID = d.BookingID
	}
	tr := driver.Transition{Event: driver.EventStartTrip, BookingID: bookingID}
	now := s.now()
	if _, err := driver.Apply(d, tr, now); err != nil {
		return d, err
	}
	if err := s.follow(ctx, bookingID, driverID, Accepted, time.Time{}, false); err != nil {
		return d, err
	}
	return s.driver.Apply(ctx, driverID, tr, now)
}
