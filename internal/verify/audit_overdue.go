package verify

import (
	"fmt"
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// CodeReservationOverdue: a driver was seen reserved, not accepted, well
// past its reservation's end, while Redis could be written.
const CodeReservationOverdue = "reservation_overdue"

// writableFaults never stop Apollo from writing a shard: replicas failing
// (the shard's other replica acknowledges, and the write proof waits for a
// failing one at most once in a while: redisroute's holdLaggard), an
// instance failing (another sweeps, within the slack).
var writableFaults = append([]string{"replica-crash", "replica-hang", "replica-slow", "replica-resync", "replica-lossy"}, instanceFaults...)

// OverdueReservations (G5, over the run, not only at its end): no driver
// read showed a reservation that was not accepted still alive more than
// the slack past its end, its read's staleness (h.readLag: driver reads are
// served by replicas) aside. Every scan expires such a reservation, so
// only a sweep that cannot write excuses it: a read is not judged when a
// fault that may stop writes to a shard (any but a replica's or an
// instance's) lasted from the reservation's end to the read. The final
// state's orphan_reservation sees only what is left at the end; a sweep
// that frees drivers late, and then catches up, is seen here.
func OverdueReservations(h History) []Violation {
	windows := faultWindows(h)
	var out []Violation
	for _, op := range h.Ops {
		s := op.Seen
		if op.Kind != ReadDriver || op.Outcome != OK || s.Status != string(driver.StatusReserved) || s.Accepted || s.ReservedUntil == 0 {
			continue
		}
		end, seen := h.sinceStart(s.ReservedUntil), op.Invoke-h.readLag.Nanoseconds()
		if seen-end <= h.Slack.Nanoseconds() || stopsWrites(windows, end, op.Invoke) {
			continue
		}
		out = append(out, Violation{Code: CodeReservationOverdue, Drivers: []string{op.DriverID}, Bookings: nonEmpty(s.BookingID), Ops: []int{op.ID},
			Message: fmt.Sprintf("driver %s was read reserved for booking %s, not accepted, at %s (op #%d), %s after its reservation ended at %s (slack %s, read lag %s), with no fault stopping writes meanwhile",
				op.DriverID, s.BookingID, runTime(op.Invoke), op.ID, time.Duration(op.Invoke-end).Round(time.Millisecond), runTime(end), h.Slack, h.readLag)})
	}
	return out
}

// overdueUnjudged skips the audit for a history that records no slack, or
// whose host clock stepped: a reservation's end, in the cluster's time,
// cannot then be placed on the run's timeline.
func overdueUnjudged(h History) string {
	if h.Slack <= 0 {
		return "the history records no slack"
	}
	return clockStepped(h, "reservations' ends")
}

// stopsWrites reports a fault that may stop writes to a shard lasting
// within [from, to].
func stopsWrites(windows []faultWindow, from, to int64) bool {
	return slices.ContainsFunc(windows, func(w faultWindow) bool {
		if w.to < from || w.from > to {
			return false
		}
		for _, kind := range faultParts(w.kind) {
			if !slices.Contains(writableFaults, kind) {
				return true
			}
		}
		return false
	})
}
