package verify

import (
	"net/http"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestDriverRegister(t *testing.T) {
	const d = "drv-1"
	ok, broken := porcupine.Ok, porcupine.Illegal
	// online: a driver who heartbeats and goes online (available, v1).
	online := []Op{heartbeat(d, 0, 0.1), eventOK(d, "go_online", "", 0.2, 0.3, drv("available", "", false, 1))}
	with := func(ops ...Op) History { return history(append(append([]Op(nil), online...), ops...)...) }
	cases := []modelCase{
		// What a driver's app may see.
		{"a reservation accepted, the trip started and ended", with(
			readDriver(d, 1, 1.1, drv("reserved", "b1", false, 2)),
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			eventOK(d, "start_trip", "b1", 3, 3.1, drv("on_trip", "b1", false, 4)),
			eventOK(d, "end_trip", "b1", 4, 4.1, drv("available", "", false, 5)),
		), ok},
		{"an accept on a reservation the app never saw", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
		), ok},
		{"a reservation lapsed and the driver was reserved again for another booking", with(
			readDriver(d, 1, 1.1, drv("reserved", "b1", false, 2)),
			readDriver(d, 12, 12.1, drv("reserved", "b2", false, 4)),
		), ok},
		{"an accept repeated is answered with the driver as it is", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			eventOK(d, "accept", "b1", 3, 3.1, drv("reserved", "b1", true, 3)),
		), ok},
		{"an accepted reservation declined by the sweep, then another reserved", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			eventOK(d, "decline", "b2", 12, 12.1, drv("available", "", false, 6)),
		), ok},
		{"a replica read may be stale by up to the lag", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			readDriver(d, 3, 3.1, drv("reserved", "b1", false, 2)),
		), ok},
		{"a refused decline changes nothing", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			eventRefused(d, "decline", "b9", 3, 3.1),
			eventOK(d, "start_trip", "b1", 4, 4.1, drv("on_trip", "b1", false, 4)),
		), ok},

		// What it must never see.
		{"an event answered with a version lower than an earlier event's", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 5)),
			eventOK(d, "decline", "b1", 3, 3.1, drv("available", "", false, 4)),
		), broken},
		{"a trip started on an accept that never happened", with(
			readDriver(d, 1, 1.1, drv("reserved", "b1", false, 2)),
			eventOK(d, "start_trip", "b1", 2, 2.1, drv("on_trip", "b1", false, 3)),
		), broken},
		{"an accept answered OK whose effect a later read contradicts", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			readDriver(d, 10, 10.1, drv("reserved", "b1", false, 3)), // the accept's own version, unaccepted
		), broken},
		// One move on, unaccepted, is a back-out's first step: the model
		// allows it, and UnacceptedUnasked asks for the driver's decline.
		{"an accept withdrawn one move on", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			readDriver(d, 10, 10.1, drv("reserved", "b1", false, 4)),
		), ok},
		{"an accepted reservation read for another booking with no accept of it", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			readDriver(d, 10, 10.1, drv("reserved", "b2", true, 5)),
		), broken},
		{"a read staler than the lag", with(
			eventOK(d, "accept", "b1", 2, 2.1, drv("reserved", "b1", true, 3)),
			readDriver(d, 10, 10.1, drv("reserved", "b1", false, 2)),
		), broken},
		{"a driver read as absent once online", with(
			readDriverAbsent(d, 10, 10.1),
		), broken},
		{"offline without going offline", with(
			readDriver(d, 10, 10.1, drv("offline", "", false, 2)),
		), broken},
	}
	runModelCases(t, DriverModel(), func(h History) map[string][]porcupine.Operation { return DriverOps(h, DefaultDriverReadLag) }, d, cases)
}

// Driver reads come from replicas and may go backwards; with the read
// policy primary they may not.
func TestDriverReadsGoBackwardsOnlyOnReplicas(t *testing.T) {
	const d = "drv-1"
	h := history(
		heartbeat(d, 0, 0.1),
		eventOK(d, "go_online", "", 0.2, 0.3, drv("available", "", false, 1)),
		readDriver(d, 1, 1.1, drv("reserved", "b1", false, 2)),
		readDriver(d, 1.2, 1.3, drv("available", "", false, 1)),
	)
	for _, c := range []struct {
		lag  time.Duration
		want porcupine.CheckResult
	}{{DefaultDriverReadLag, porcupine.Ok}, {0, porcupine.Illegal}} {
		if got := checkOne(DriverModel(), DriverOps(h, c.lag), d); got != c.want {
			t.Errorf("lag %s: porcupine says %s, want %s", c.lag, got, c.want)
		}
	}
}

func TestDriverUnknownOutcomesMayOrMayNotHaveHappened(t *testing.T) {
	const d = "drv-1"
	ok, broken := porcupine.Ok, porcupine.Illegal
	reserved := []Op{
		heartbeat(d, 0, 0.1),
		eventOK(d, "go_online", "", 0.2, 0.3, drv("available", "", false, 1)),
		readDriver(d, 1, 1.1, drv("reserved", "b1", false, 2)),
	}
	with := func(ops ...Op) History { return history(append(append([]Op(nil), reserved...), ops...)...) }
	acceptFailedLate := refused(driverEventOp(d, "accept", "b1", 2, 2.1), http.StatusConflict, "illegal_transition")
	cases := []modelCase{
		{"an unknown accept that happened", with(
			eventUnknown(d, "accept", "b1", 2, 2.1),
			eventOK(d, "start_trip", "b1", 10, 10.1, drv("on_trip", "b1", false, 4)),
		), ok},
		{"an unknown accept that did not happen", with(
			eventUnknown(d, "accept", "b1", 2, 2.1),
			readDriver(d, 10, 10.1, drv("available", "", false, 3)),
		), ok},
		{"an accept refused after the driver accepted (the booking could not follow)", with(
			acceptFailedLate,
			eventOK(d, "start_trip", "b1", 10, 10.1, drv("on_trip", "b1", false, 4)),
		), ok},
		{"an unknown accept for another booking cannot explain an accepted reservation", with(
			eventUnknown(d, "accept", "b9", 2, 2.1),
			eventOK(d, "start_trip", "b1", 10, 10.1, drv("on_trip", "b1", false, 4)),
		), broken},
		{"an unknown heartbeat is the first sight of a driver", history(
			unknown(onDriver(op(Heartbeat, 0, 0.1), d)),
			readDriver(d, 1, 1.1, drv("offline", "", false, 0)),
		), ok},
	}
	runModelCases(t, DriverModel(), func(h History) map[string][]porcupine.Operation { return DriverOps(h, DefaultDriverReadLag) }, d, cases)
}

// An unknown write lands before its deadline (plus clockSlack) or never:
// one that shows up later is a violation, which a history recorded
// without deadlines cannot tell.
func TestAnUnknownWriteLandsBeforeItsDeadlineOrNever(t *testing.T) {
	const d, b = "drv-1", "bk-1"
	ok, broken := porcupine.Ok, porcupine.Illegal
	driverLate := func(offline Op) History {
		return history(
			heartbeat(d, 0, 0.1),
			eventOK(d, "go_online", "", 0.2, 0.3, drv("available", "", false, 1)),
			offline,
			readDriver(d, 15, 15.1, drv("available", "", false, 1)), // not by 15 (reads may lag 4 s)
			eventOK(d, "go_online", "", 20, 20.1, drv("available", "", false, 3)),
		)
	}
	bookingLate := func(create Op) History {
		return history(create, readBookingAbsent(b, 10, 10.1), readBooking(b, 20, 20.1, bk("searching", "", 1)))
	}
	t.Run("driver", func(t *testing.T) {
		runModelCases(t, DriverModel(), func(h History) map[string][]porcupine.Operation { return DriverOps(h, DefaultDriverReadLag) }, d, []modelCase{
			{"a go_offline without a deadline may land at 16", driverLate(eventUnknown(d, "go_offline", "", 2, 2.1)), ok},
			{"a go_offline due by 5 cannot land at 16", driverLate(by(eventUnknown(d, "go_offline", "", 2, 2.1), 5)), broken},
			{"a go_offline due by 18 may land at 16", driverLate(by(eventUnknown(d, "go_offline", "", 2, 2.1), 18)), ok},
		})
	})
	t.Run("booking", func(t *testing.T) {
		runModelCases(t, BookingModel(), BookingOps, b, []modelCase{
			{"a create without a deadline may land at 15", bookingLate(createUnknown(b, 2, 2.1)), ok},
			{"a create due by 5 cannot land at 15", bookingLate(by(createUnknown(b, 2, 2.1), 5)), broken},
		})
	})
}
