package verify

import (
	"fmt"
	"time"
)

// CodeTimeOutOfBounds: a booking's deadline or a reservation's end, as
// Apollo answered it, is not one the settings allow.
const CodeTimeOutOfBounds = "time_out_of_bounds"

// TimesOutOfBounds checks the times the other audits measure lateness
// from, which Apollo itself reports: booking_stuck, orphan_reservation and
// reservation_overdue would pass a booking whose deadline moved an hour on,
// or a reservation made for ten minutes (a reviewer found them taken on
// trust). Every answer that shows a booking's deadline, once a create of
// it was answered OK, shows the one that create answered: a deadline never
// changes, and a booking reported created is never withdrawn and made
// again (before, an unconfirmed one can be, with a new deadline). And
// every reservation end an answer shows ends within the reservation TTL
// of that answer, within clockTolerance: whatever made it did so before
// the answer. (A deadline set outside its creates' span is clock_off's.)
// One violation a booking or a driver.
func TimesOutOfBounds(h History) []Violation {
	var out []Violation
	created := map[string]Op{} // each booking's first create answered OK
	for _, op := range h.Ops {
		if c, ok := created[op.BookingID]; op.Kind == CreateBooking && op.Outcome == OK && op.Seen.Deadline != 0 && (!ok || op.Return < c.Return) {
			created[op.BookingID] = op
		}
	}
	moved, long := map[string]bool{}, map[string]bool{} // reported, by booking and by driver
	ttl, tol := h.ReservationTTL.Nanoseconds(), clockTolerance.Nanoseconds()
	check := func(op Op) {
		s := op.Seen
		if f, ok := created[op.BookingID]; ok && s.Deadline != 0 && op.Invoke >= f.Return && !moved[op.BookingID] {
			if f.Seen.Deadline != s.Deadline {
				moved[op.BookingID] = true
				out = append(out, Violation{Code: CodeTimeOutOfBounds, Bookings: []string{op.BookingID}, Ops: opIDs([]Op{f, op}),
					Message: fmt.Sprintf("booking %s's deadline moved: %s as its create %s answered, %s as %s answered after it",
						op.BookingID, runTime(h.sinceStart(f.Seen.Deadline)), describeOps([]Op{f}), runTime(h.sinceStart(s.Deadline)), describeOps([]Op{op}))})
			}
		}
		driverID := op.DriverID
		if op.Kind != ReadDriver && op.Kind != DriverEvent {
			driverID = s.DriverID // a booking's answer: its driver
		}
		if s.ReservedUntil == 0 || long[driverID] {
			return
		}
		if end := h.sinceStart(s.ReservedUntil); end > op.Return+ttl+tol {
			long[driverID] = true
			out = append(out, Violation{Code: CodeTimeOutOfBounds, Drivers: nonEmpty(driverID), Bookings: nonEmpty(op.BookingID, s.BookingID), Ops: opIDs([]Op{op}),
				Message: fmt.Sprintf("%s answered at %s a reservation ending at %s, %s later: longer than the reservation TTL, %s (tolerance %s)",
					describeOps([]Op{op}), runTime(op.Return), runTime(end), time.Duration(end-op.Return).Round(time.Millisecond), h.ReservationTTL, clockTolerance)})
		}
	}
	for _, op := range h.Ops {
		if op.Outcome == OK {
			check(op)
		}
	}
	for _, op := range h.finalReads() {
		check(op)
	}
	return out
}

// timesUnjudged skips TimesOutOfBounds on a history that does not record
// the reservation TTL (an older apollo verify wrote it), or during which
// this host's clock stepped.
func timesUnjudged(h History) string {
	if h.ReservationTTL <= 0 {
		return "the history records no reservation TTL (an older apollo verify wrote it)"
	}
	return clockStepped(h, "deadlines and reservations' ends")
}
