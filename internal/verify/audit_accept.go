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
	firstAccept := map[[2]string]int64{}
	for _, op := range h.Ops {
		if op.Kind != DriverEvent || op.Event != string(driver.EventAccept) {
			continue
		}
		k := [2]string{op.DriverID, op.BookingID}
		if t, ok := firstAccept[k]; !ok || op.Invoke < t {
			firstAccept[k] = op.Invoke
		}
	}
	reported := map[[2]string]bool{}
	var out []Violation
	for _, op := range append(append([]Op(nil), h.Ops...), h.finalReads()...) {
		s := op.Seen
		answered := op.ID < 0 || op.Outcome == OK && op.Status < 300
		if !answered || op.BookingID == "" || s.Status != string(booking.Accepted) ||
			(op.Kind != ReadBooking && op.Kind != CreateBooking && op.Kind != CancelBooking) {
			continue
		}
		k := [2]string{s.DriverID, op.BookingID}
		if t, asked := firstAccept[k]; asked && t <= op.Return || reported[k] {
			continue
		}
		if t, asked := firstAccept[[2]string{s.DriverID, ""}]; asked && t <= op.Return {
			continue // an accept of the driver's current booking, whichever it was
		}
		reported[k] = true
		out = append(out, Violation{Code: CodeAcceptedUnasked, Bookings: []string{op.BookingID}, Drivers: nonEmpty(s.DriverID), Ops: opIDs([]Op{op}),
			Message: fmt.Sprintf("booking %s was answered accepted by driver %q at version %d (%s, returned %s), and that driver had sent no accept of it",
				op.BookingID, s.DriverID, s.Version, describeOps([]Op{op}), runTime(op.Return))})
	}
	return out
}
