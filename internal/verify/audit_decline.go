package verify

import (
	"fmt"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// CodeDeclineKeptBooking: a driver's decline was answered done, and its
// booking went on holding the driver.
const CodeDeclineKeptBooking = "decline_kept_booking"

// DeclinesKeptBookings checks that a decline answered OK let its booking
// go (G1, G2). Apollo moves the booking on before it frees the driver, so
// once a decline of booking b by driver d returned OK, b's record is no
// longer at any version that held d (allocated or accepted, naming d)
// throughout the decline: a read begun after the decline returned that
// shows b holding d at a version a read showed before the decline was
// invoked is a violation. (A version never comes back, so b was at that
// version all the while.) Before 2026-12-06 a driver backing out of an
// accepted booking was answered OK and left the booking accepted, naming a
// driver free for others; driver_held_twice sees that only once another
// booking holds the driver too. One violation a decline.
func DeclinesKeptBookings(h History) []Violation {
	type hold struct {
		booking, driver string
		version         int64
	}
	holding := func(op Op) (hold, bool) {
		s := op.Seen
		if !bookingAnswer(op) || s.DriverID == "" || s.Status != string(booking.Allocated) && s.Status != string(booking.Accepted) {
			return hold{}, false
		}
		return hold{op.BookingID, s.DriverID, s.Version}, true
	}
	reads := h.answers()
	firstSeen, lastSeen := map[hold]Op{}, map[hold]Op{}
	for _, op := range reads {
		k, ok := holding(op)
		if !ok {
			continue
		}
		if f, seen := firstSeen[k]; !seen || op.Return < f.Return {
			firstSeen[k] = op
		}
		if l, seen := lastSeen[k]; !seen || op.Invoke > l.Invoke {
			lastSeen[k] = op
		}
	}
	var out []Violation
	for _, d := range h.Ops {
		if d.Kind != DriverEvent || d.Event != string(driver.EventDecline) || d.Outcome != OK || d.BookingID == "" {
			continue
		}
		var kept *hold // the earliest version kept, so a report is the same every time
		for k, before := range firstSeen {
			if k.booking == d.BookingID && k.driver == d.DriverID && before.Return <= d.Invoke && lastSeen[k].Invoke >= d.Return &&
				(kept == nil || k.version < kept.version) {
				kept = &k
			}
		}
		if kept == nil {
			continue
		}
		before, after := firstSeen[*kept], lastSeen[*kept]
		out = append(out, Violation{Code: CodeDeclineKeptBooking, Bookings: []string{kept.booking}, Drivers: []string{kept.driver},
			Ops: opIDs([]Op{before, d, after}),
			Message: fmt.Sprintf("driver %s's decline of booking %s (op #%d, %s to %s) was answered done, but the booking held the driver at version %d before it (%s) and after it (%s)",
				kept.driver, kept.booking, d.ID, runTime(d.Invoke), runTime(d.Return), kept.version, describeOps([]Op{before}), describeOps([]Op{after}))})
	}
	return out
}
