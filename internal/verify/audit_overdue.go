package verify

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// CodeReservationOverdue: a driver was seen reserved, not accepted, well
// past its reservation's end, while Redis could be written.
const CodeReservationOverdue = "reservation_overdue"

// replicaFaults never stop Apollo from writing a shard: the shard's other
// replica acknowledges, and the write proof waits for a failing one at
// most once in a while (redisroute's holdLaggard). An instance's faults do
// not either when there is another instance (it takes the work over,
// within the slack); with one instance they stop all of it.
var replicaFaults = []string{"replica-crash", "replica-hang", "replica-slow", "replica-resync", "replica-lossy"}

// OverdueReservations (G5, over the run, not only at its end): no driver
// read showed a reservation that was not accepted still alive more than
// the slack past its end, its read's staleness (h.readLag: driver reads are
// served by replicas) aside. Every scan expires such a reservation, so
// only a sweep that cannot write excuses it: a read is judged only when,
// between the reservation's end and the read, the slack passed in one
// stretch with no fault that may stop writes to a shard (any but a
// replica's or, when there is another instance, an instance's). A fault
// anywhere in between excused any read before (a hang of half a second,
// healed 50 s before the read: a reviewer found the audit all but vacuous
// under a fault schedule). The final state's orphan_reservation sees only
// what is left at the end; a sweep that frees drivers late, and then
// catches up, is seen here. A reservation withdrawn (its driver backing
// out of it, once accepted) is not accepted only since the back-out: it is
// judged from the later of its end and its driver's decline's end.
func OverdueReservations(h History) []Violation {
	windows, reopened := faultWindows(h), h.reopenings()
	var out []Violation
	for _, op := range h.Ops {
		s := op.Seen
		if op.Kind != ReadDriver || op.Outcome != OK || s.Status != string(driver.StatusReserved) || s.Accepted || s.ReservedUntil == 0 {
			continue
		}
		end, seen := h.sinceStart(s.ReservedUntil), op.Invoke-h.readLag.Nanoseconds()
		if backOut := reopened.by(s.BookingID, op.Return); s.Withdrawn && backOut != 0 {
			end = max(end, h.sinceStart(backOut))
		}
		calm, ok := writableFor(windows, end, seen, h.Slack.Nanoseconds(), h.instances() < 2)
		if !ok {
			continue
		}
		out = append(out, Violation{Code: CodeReservationOverdue, Drivers: []string{op.DriverID}, Bookings: nonEmpty(s.BookingID), Ops: []int{op.ID},
			Message: fmt.Sprintf("driver %s was read reserved for booking %s, not accepted, at %s (op #%d), %s after its reservation ended at %s (slack %s, read lag %s), with no fault stopping writes from %s to %s",
				op.DriverID, s.BookingID, runTime(op.Invoke), op.ID, time.Duration(op.Invoke-end).Round(time.Millisecond), runTime(end), h.Slack, h.readLag, runTime(calm[0]), runTime(calm[1]))})
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

// writableFor returns a stretch within [from, to] longer than need with
// no fault that may stop writes to a shard (or, alone: the one instance's
// work), if there is one: the first.
func writableFor(windows []faultWindow, from, to, need int64, alone bool) (calm [2]int64, ok bool) {
	var stops [][2]int64
	for _, w := range windows {
		if w.to >= from && w.from <= to && stopsWrites(w, alone) {
			stops = append(stops, [2]int64{w.from, w.to})
		}
	}
	slices.SortFunc(stops, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	at := from
	for _, st := range append(stops, [2]int64{to, to}) {
		if st[0]-at > need {
			return [2]int64{at, st[0]}, true
		}
		at = max(at, st[1])
	}
	return calm, false
}

// stopsWrites reports a fault that may stop writes to a shard, or, alone,
// the one instance's work.
func stopsWrites(w faultWindow, alone bool) bool {
	for _, kind := range faultParts(w.kind) {
		if !slices.Contains(replicaFaults, kind) && (alone || !slices.Contains(instanceFaults, kind)) {
			return true
		}
	}
	return false
}
