package verify

import (
	"fmt"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// CodeAcceptedUnasked: a booking was accepted by a driver who never sent
// an accept of it.
const CodeAcceptedUnasked = "accepted_unasked"

// AcceptedUnasked checks that a booking is accepted only by its driver's
// accept: every answer showing booking b accepted by driver d comes after
// an accept of b that d sent (invoked before that answer returned, of any
// outcome: an accept answered 409 may still have been recorded on the
// driver, whose record the workers settle the booking from). Nothing else
// in Apollo may make a booking accepted; without this audit a pipeline
// that did would pass every other check. One violation a booking and
// driver.
func AcceptedUnasked(h History) []Violation {
	accepts := h.firstSent(true, driver.EventAccept)
	reported := map[[2]string]bool{}
	var out []Violation
	for _, op := range h.answers() {
		s := op.Seen
		if !bookingAnswer(op) || s.Status != string(booking.Accepted) {
			continue
		}
		k := [2]string{s.DriverID, op.BookingID}
		if reported[k] || accepts.of(s.DriverID, op.BookingID) <= op.Return {
			continue // (an accept naming no booking is one of the driver's current one, whichever)
		}
		reported[k] = true
		out = append(out, Violation{Code: CodeAcceptedUnasked, Bookings: []string{op.BookingID}, Drivers: nonEmpty(s.DriverID), Ops: opIDs([]Op{op}),
			Message: fmt.Sprintf("booking %s was answered accepted by driver %q at version %d (%s, returned %s), and that driver had sent no accept of it",
				op.BookingID, s.DriverID, s.Version, describeOps([]Op{op}), runTime(op.Return))})
	}
	return out
}

// CodeReopenedUnasked: an accepted booking moved on though its driver
// sent no decline of it.
const CodeReopenedUnasked = "reopened_unasked"

// ReopenedUnasked checks that an accepted booking moves on (back to
// searching) only by its driver's back-out: an answer showing booking b
// at a version after one at which b was accepted by driver d comes after
// a decline of b that d sent (invoked before that answer returned, of any
// outcome: a decline answered 409 may have let the booking go). The
// booking model allows accepted → searching as a move it does not see, so
// that a worker or a sweep that reopened accepted bookings would pass it;
// this audit would not. One violation a booking and driver.
func ReopenedUnasked(h History) []Violation {
	declines := h.firstSent(true, driver.EventDecline)
	reads := h.answers()
	accepted := map[string][]Op{} // by booking: answers showing it accepted
	for _, op := range reads {
		if bookingAnswer(op) && op.Seen.Status == string(booking.Accepted) {
			accepted[op.BookingID] = append(accepted[op.BookingID], op)
		}
	}
	reported := map[[2]string]bool{}
	var out []Violation
	for _, later := range reads {
		if !bookingAnswer(later) {
			continue
		}
		for _, was := range accepted[later.BookingID] {
			d := was.Seen.DriverID
			k := [2]string{d, later.BookingID}
			if reported[k] || was.Return > later.Invoke || later.Seen.Version <= was.Seen.Version {
				continue
			}
			if declines.of(d, later.BookingID) <= later.Return {
				continue
			}
			reported[k] = true
			out = append(out, Violation{Code: CodeReopenedUnasked, Bookings: []string{later.BookingID}, Drivers: nonEmpty(d), Ops: opIDs([]Op{was, later}),
				Message: fmt.Sprintf("booking %s, accepted by driver %q at version %d (%s), was at version %d, %s, after it (%s), and that driver had sent no decline of it",
					later.BookingID, d, was.Seen.Version, describeOps([]Op{was}), later.Seen.Version, later.Seen.Status, describeOps([]Op{later}))})
		}
	}
	return out
}

// CodeUnacceptedUnasked: a driver's accept was withdrawn though the
// driver sent no decline of its booking.
const CodeUnacceptedUnasked = "unaccepted_unasked"

// UnacceptedUnasked checks that a driver's accept is withdrawn (reserved
// for the same booking, no longer accepted, at a later version) only by
// the driver backing out: after a decline of that booking it sent,
// invoked before the answer showing it returned, of any outcome. The
// driver model allows the withdrawal as a move it does not see (the
// back-out's first step, seen by a read while the back-out runs or after
// its instance stopped), so a pipeline that withdrew accepts on its own
// would pass it; this audit would not. One violation a driver and booking.
func UnacceptedUnasked(h History) []Violation {
	declines := h.firstSent(true, driver.EventDecline)
	reads := h.answers()
	accepted := map[[2]string][]Op{} // by driver and booking
	var withdrawn []Op
	for _, op := range reads {
		if !driverAnswer(op) || op.Seen.Status != string(driver.StatusReserved) {
			continue
		}
		k := [2]string{op.DriverID, op.Seen.BookingID}
		if op.Seen.Accepted {
			accepted[k] = append(accepted[k], op)
		} else {
			withdrawn = append(withdrawn, op)
		}
	}
	reported := map[[2]string]bool{}
	var out []Violation
	for _, later := range withdrawn {
		k := [2]string{later.DriverID, later.Seen.BookingID}
		if reported[k] || declines.of(k[0], k[1]) <= later.Return {
			continue
		}
		for _, was := range accepted[k] {
			if was.Seen.Version >= later.Seen.Version {
				continue
			}
			reported[k] = true
			out = append(out, Violation{Code: CodeUnacceptedUnasked, Drivers: []string{k[0]}, Bookings: nonEmpty(k[1]), Ops: opIDs([]Op{was, later}),
				Message: fmt.Sprintf("driver %s, which accepted booking %s at version %d (%s), was reserved for it unaccepted at version %d (%s), and had sent no decline of it",
					k[0], k[1], was.Seen.Version, describeOps([]Op{was}), later.Seen.Version, describeOps([]Op{later}))})
			break
		}
	}
	return out
}

// CodeTripBookingMoved: a booking moved on after its driver's trip for it
// started.
const CodeTripBookingMoved = "trip_booking_moved"

// TripBookingsMoved checks that a booking whose trip started stays
// accepted with that driver: once a start_trip of b by d was answered OK,
// every answer showing b that was asked for after it shows b accepted
// with d. Nothing may move it on: a decline of a driver on its trip is
// refused before its booking step, and an accepted booking reopens only
// once its driver's accept is withdrawn, which a trip cannot follow. A
// booking moved on would take a second driver for a rider already in a
// car. One violation a booking.
func TripBookingsMoved(h History) []Violation {
	started := map[string]Op{} // by booking: the first start_trip answered OK
	for _, op := range h.Ops {
		if op.Kind != DriverEvent || op.Event != string(driver.EventStartTrip) || op.Outcome != OK || op.BookingID == "" {
			continue
		}
		if s, ok := started[op.BookingID]; !ok || op.Return < s.Return {
			started[op.BookingID] = op
		}
	}
	reported := map[string]bool{}
	var out []Violation
	for _, op := range h.answers() {
		trip, ok := started[op.BookingID]
		if !ok || reported[op.BookingID] || !bookingAnswer(op) || op.Invoke < trip.Return ||
			op.Seen.Status == string(booking.Accepted) && op.Seen.DriverID == trip.DriverID {
			continue
		}
		reported[op.BookingID] = true
		out = append(out, Violation{Code: CodeTripBookingMoved, Bookings: []string{op.BookingID}, Drivers: []string{trip.DriverID}, Ops: opIDs([]Op{trip, op}),
			Message: fmt.Sprintf("driver %s's trip for booking %s started (op #%d, answered at %s), and the booking was then %s with %q at version %d (%s)",
				trip.DriverID, op.BookingID, trip.ID, runTime(trip.Return), op.Seen.Status, op.Seen.DriverID, op.Seen.Version, describeOps([]Op{op}))})
	}
	return out
}
