package verify

import (
	"fmt"
	"slices"
	"time"
)

// CodeClockOff: a booking was created, by the time the instance recorded,
// outside the requests that could have created it.
const CodeClockOff = "clock_off"

// clockTolerance is how far an instance's time may be from the cluster's:
// it keeps the cluster's time as read by precise TIME round trips (each
// reading within 100 ms), and no reading can be off by more than half the
// router's 1 s clock check; plus 1 ms for the deadline's rounding to whole
// milliseconds. verify runs the cluster on its own machine, so its clock
// is the cluster's.
const clockTolerance = 500*time.Millisecond + time.Millisecond

// ClockOff (instances keep the cluster's time): every booking answered as
// created was created, by its deadline less the allocation timeout,
// between the first request that could have created it (its ID is a hash
// of rider and key) and the answer, within clockTolerance. An instance
// keeping its own clock, off from the cluster's, sets booking deadlines,
// reservation ends and Spampede's buckets that the other instances read
// in another time. One violation per booking.
func ClockOff(h History) []Violation {
	first := map[string]int64{}
	sentTo := map[string][]string{} // the instances a booking's creates went to
	for _, op := range h.Ops {
		if op.Kind == CreateBooking {
			if at, ok := first[op.BookingID]; !ok || op.Invoke < at {
				first[op.BookingID] = op.Invoke
			}
			if !slices.Contains(sentTo[op.BookingID], op.Instance) {
				sentTo[op.BookingID] = append(sentTo[op.BookingID], op.Instance)
			}
		}
	}
	var out []Violation
	seen := map[string]bool{}
	tol := clockTolerance.Nanoseconds()
	for _, op := range h.Ops {
		if op.Kind != CreateBooking || op.Outcome != OK || op.Seen.Deadline == 0 || seen[op.BookingID] {
			continue
		}
		created := h.sinceStart(op.Seen.Deadline) - h.AllocationTimeout.Nanoseconds()
		if created >= first[op.BookingID]-tol && created <= op.Return+tol {
			continue
		}
		seen[op.BookingID] = true
		out = append(out, Violation{Code: CodeClockOff, Bookings: []string{op.BookingID}, Ops: []int{op.ID}, Instances: slices.Sorted(slices.Values(sentTo[op.BookingID])),
			Message: fmt.Sprintf("booking %s was created at %s by its deadline, but the requests that could have created it ran from %s to %s (tolerance %s): the time of the instance that created it (one of those listed) is not the cluster's",
				op.BookingID, runTime(created), runTime(first[op.BookingID]), runTime(op.Return), clockTolerance)})
	}
	return out
}

// clockStepBound is the host clock step past which ClockOff is not
// judged: a fifth of its tolerance, well above the drift of a run.
const clockStepBound = clockTolerance / 5

// clockUnjudged skips ClockOff on a history that does not record the
// allocation timeout (written by an older apollo verify): a booking's
// creation time cannot be told from its deadline without it; and on one
// during which this host's clock stepped: deadlines, in the cluster's
// time, which follows the nodes' clocks and so the host's, no longer
// line up with the run's monotonic timeline (a step of 5.7 s on
// 2026-12-05 made every booking after it look created 5.7 s late).
func clockUnjudged(h History) string {
	if h.AllocationTimeout <= 0 {
		return "the history records no allocation timeout (an older apollo verify wrote it): creation times cannot be told"
	}
	return clockStepped(h, "creation times, read from deadlines in the cluster's time,")
}

// clockStepped says why what, times in the cluster's time, cannot be
// judged when this host's clock stepped during the run; "" when it did not.
func clockStepped(h History, what string) string {
	if h.HostClockStep.Abs() <= clockStepBound {
		return ""
	}
	return fmt.Sprintf("this host's clock stepped by %s during the run: %s cannot be placed on the run's timeline", h.HostClockStep.Round(time.Millisecond), what)
}
