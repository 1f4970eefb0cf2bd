package driver

import (
	"fmt"
	"slices"
	"time"
)

// Transition is an event with the data it needs.
type Transition struct {
	Event     Event
	BookingID string // every event but go_online and go_offline: the booking concerned
	// Until: reserve: when the reservation lapses, after now. Accept,
	// decline, expire and back_out: the end of the reservation answered,
	// released (or whose accept to withdraw), or zero for whichever the
	// driver holds for BookingID. A booking can reserve the same driver
	// again (declined, then allocated anew), and an answer or a release
	// meant for its earlier reservation must not act on the later one
	// (ErrWrongReservation).
	Until    time.Time
	Services []string // go_online: the services offered (see ValidateServices)
}

// target is the state machine: the status each legal (from, event) pair
// leads to. Everything not listed is illegal.
func target(from Status, ev Event) (Status, bool) {
	switch {
	case from == StatusOffline && ev == EventGoOnline:
		return StatusAvailable, true
	case from == StatusAvailable && ev == EventGoOffline:
		return StatusOffline, true
	case from == StatusAvailable && ev == EventReserve:
		return StatusReserved, true
	case from == StatusReserved && (ev == EventAccept || ev == EventBackOut):
		return StatusReserved, true
	case from == StatusReserved && (ev == EventDecline || ev == EventExpire):
		return StatusAvailable, true
	case from == StatusReserved && ev == EventStartTrip:
		return StatusOnTrip, true
	case from == StatusOnTrip && ev == EventEndTrip:
		return StatusAvailable, true
	}
	return "", false
}

// Apply returns d after tr at time now, with Version incremented, or an
// error if tr is not allowed, checked in this order:
//   - *InvalidArgumentError (ErrInvalidArgument) when d.Status or tr.Event
//     is not a known value;
//   - *TransitionError (ErrIllegalTransition) when the state machine has no
//     such move from d.Status;
//   - ErrWrongBooking when a booking event names a booking d does not hold,
//     and ErrWrongReservation (which matches ErrWrongBooking too) when an
//     answer or a release (accept, decline, expire, back_out) names a
//     reservation of it (Until) that d no longer holds;
//   - the event's own preconditions: *TransitionError for accepting twice or
//     starting an unaccepted trip, ErrReservationExpired,
//     ErrReservationNotExpired, and *InvalidArgumentError for malformed data
//     (ErrInvalidServices for go_online).
//
// Apply never modifies d, and the result does not share d's or tr's slices.
func Apply(d Driver, tr Transition, now time.Time) (Driver, error) {
	if _, err := ParseStatus(string(d.Status)); err != nil {
		return d, err
	}
	if _, err := ParseEvent(string(tr.Event)); err != nil {
		return d, err
	}
	to, ok := target(d.Status, tr.Event)
	if !ok {
		return d, &TransitionError{From: d.Status, Event: tr.Event, Reason: "not allowed"}
	}
	// An empty ID never matches, even a corrupt driver with no booking.
	if tr.Event.bookingScoped() && (tr.BookingID == "" || tr.BookingID != d.BookingID) {
		// Do not echo the held booking: the caller may not own it.
		return d, fmt.Errorf("driver: %s for booking %.64q, which the driver does not hold: %w",
			tr.Event, tr.BookingID, ErrWrongBooking)
	}
	if namesReservation(tr.Event) && !tr.Until.IsZero() && !SameReservationEnd(tr.Until, d.ReservedUntil) {
		return d, fmt.Errorf("driver: %s of booking %.64q's reservation until %s, which the driver no longer holds (the booking reserved it again): %w",
			tr.Event, tr.BookingID, tr.Until.UTC().Format(time.RFC3339Nano), ErrWrongReservation)
	}
	if err := checkPreconditions(d, tr, now); err != nil {
		return d, err
	}

	next := d
	next.Status = to
	next.Version++
	switch tr.Event {
	case EventGoOnline:
		next.Services = slices.Clone(tr.Services)
	case EventReserve:
		next.BookingID, next.ReservedUntil, next.Accepted, next.Withdrawn = tr.BookingID, tr.Until, false, false
	case EventAccept:
		next.Accepted = true
	case EventBackOut:
		next.Accepted, next.Withdrawn = false, true
	case EventStartTrip:
		// A trip does not lapse; the reservation fields are done with.
		next.ReservedUntil, next.Accepted = time.Time{}, false
	}
	if to == StatusOffline || to == StatusAvailable {
		next.BookingID, next.ReservedUntil, next.Accepted, next.Withdrawn = "", time.Time{}, false, false
	}
	return next, nil
}

// checkPreconditions checks what a legal move needs beyond its (status,
// event) pair.
func checkPreconditions(d Driver, tr Transition, now time.Time) error {
	switch tr.Event {
	case EventGoOnline:
		return ValidateServices(tr.Services)
	case EventReserve:
		if err := validateID("booking_id", tr.BookingID); err != nil {
			return err
		}
		if !tr.Until.After(now) {
			return invalidArg("until", "must be after now")
		}
	case EventAccept:
		if d.Accepted {
			return &TransitionError{From: d.Status, Event: tr.Event, Reason: "reservation already accepted"}
		}
		if d.Withdrawn {
			// One way: an accept sent again while the booking lets go would
			// let a trip start for a booking searching for another driver.
			return &TransitionError{From: d.Status, Event: tr.Event, Reason: "the driver is backing out of the reservation"}
		}
		return checkNotLapsed(d, tr, now)
	case EventStartTrip:
		if !d.Accepted {
			return &TransitionError{From: d.Status, Event: tr.Event, Reason: "reservation not accepted"}
		}
		return checkNotLapsed(d, tr, now)
	case EventBackOut:
		// Allowed once the reservation has lapsed too: the back-out is an
		// accepted driver's only way out then.
		if !d.Accepted {
			return &TransitionError{From: d.Status, Event: tr.Event, Reason: "reservation not accepted"}
		}
	case EventExpire:
		// An accepted reservation is held by its booking: it no longer
		// lapses. Expiring it would free a driver on the way to a rider
		// for a second booking.
		if d.Accepted {
			return &TransitionError{From: d.Status, Event: tr.Event, Reason: "reservation accepted"}
		}
		if now.Before(d.ReservedUntil) {
			return fmt.Errorf("driver: cannot expire booking %.64q before %s: %w",
				tr.BookingID, d.ReservedUntil.Format(time.RFC3339Nano), ErrReservationNotExpired)
		}
	}
	return nil
}

// namesReservation reports an event that may name the reservation it is
// for (Transition.Until), so that one meant for an earlier reservation of
// the same booking cannot act on a later one.
func namesReservation(ev Event) bool {
	return ev == EventAccept || ev == EventDecline || ev == EventExpire || ev == EventBackOut
}

// SameReservationEnd reports whether two reservation ends are the same
// one. Stores keep them to the millisecond (a driver's record does), so
// they are compared at that precision.
func SameReservationEnd(a, b time.Time) bool { return a.UnixMilli() == b.UnixMilli() }

func checkNotLapsed(d Driver, tr Transition, now time.Time) error {
	if !now.Before(d.ReservedUntil) {
		return fmt.Errorf("driver: cannot %s booking %.64q: reservation lapsed at %s: %w",
			tr.Event, tr.BookingID, d.ReservedUntil.Format(time.RFC3339Nano), ErrReservationExpired)
	}
	return nil
}
