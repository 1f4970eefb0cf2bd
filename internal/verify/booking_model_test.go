package verify

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// checkOne runs porcupine on one partition of a model.
func checkOne(m porcupine.Model, parts map[string][]porcupine.Operation, key string) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(m, parts[key], 0)
}

type modelCase struct {
	name string
	h    History
	want porcupine.CheckResult
}

func TestBookingLifecycle(t *testing.T) {
	const b = "bk-1"
	ok, broken := porcupine.Ok, porcupine.Illegal
	cases := []modelCase{
		// What riders may see.
		{"a created booking is read back, then allocated, then accepted", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
			readBooking(b, 4, 5, bk("accepted", "d1", 3)),
		), ok},
		{"reads may miss the versions the workers moved through", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("allocated", "d2", 4)), // allocated d1, back to searching, allocated d2
			readBooking(b, 4, 5, bk("unallocated", "", 6)),
		), ok},
		{"a create allocates before answering", history(
			create(b, 0, 1, bk("allocated", "d1", 2)),
			readBooking(b, 2, 3, bk("accepted", "d1", 3)),
		), ok},
		{"a retry with the same key is answered with the booking as it is", history(
			create(b, 0, 1, bk("searching", "", 1)),
			create(b, 2, 3, bk("allocated", "d1", 2)),
		), ok},
		{"a cancel of an allocated booking is answered cancelled at the next version", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
			cancel(b, 4, 5, bk("cancelled", "", 3)),
			readBooking(b, 6, 7, bk("cancelled", "", 3)),
		), ok},
		{"a cancel sent again is answered with the cancelled booking as it is", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancelUnknown(b, 2, 3),
			cancel(b, 4, 5, bk("cancelled", "", 2)),
			cancel(b, 6, 7, bk("cancelled", "", 2)),
		), ok},
		{"a cancel refused as illegal once the booking is accepted", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancelRefused(b, 2, 3),
			readBooking(b, 4, 5, bk("accepted", "d1", 3)),
		), ok},
		// verify's primary-full run: a decline's booking write went
		// through, its driver write did not (the driver's primary was
		// full), and each decline the driver's app sent again wrote the
		// booking, already searching, once more.
		{"a decline writes a booking that is already searching", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
			readBooking(b, 4, 5, bk("searching", "", 3)),
			readBooking(b, 6, 7, bk("searching", "", 4)),
			readBooking(b, 8, 9, bk("searching", "", 5)),
			readBooking(b, 10, 11, bk("unallocated", "", 6)),
		), ok},
		{"a create refused is never seen", history(
			createRefused(b, 0, 1),
			readBookingAbsent(b, 2, 3),
		), ok},

		// What riders must never see.
		{"a created booking reads as absent afterwards (G3: lost)", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBookingAbsent(b, 2, 3),
		), broken},
		{"a booking confirmed by a retry is withdrawn", history(
			createUnknown(b, 0, 1),
			create(b, 2, 3, bk("searching", "", 1)),
			readBookingAbsent(b, 4, 5),
		), broken},
		{"a read older than an earlier one (monotonic reads)", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
			readBooking(b, 4, 5, bk("searching", "", 1)),
		), broken},
		{"a read older than the create's answer (read your writes)", history(
			create(b, 0, 1, bk("allocated", "d1", 2)),
			readBooking(b, 2, 3, bk("searching", "", 1)),
		), broken},
		{"a final status changes", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("unallocated", "", 2)),
			readBooking(b, 4, 5, bk("searching", "", 3)),
		), broken},
		{"an accepted booking searches again: its driver backed out", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("accepted", "d1", 3)),
			readBooking(b, 4, 5, bk("searching", "", 4)),
		), ok},
		{"an accepted booking's driver changes in one move", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("accepted", "d1", 3)),
			readBooking(b, 4, 5, bk("accepted", "d2", 4)),
		), broken},
		{"an accepted booking's driver is not the one it was allocated one version before", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
			readBooking(b, 4, 5, bk("accepted", "d2", 3)),
		), broken},
		{"accepted one version after searching (allocated skipped)", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("accepted", "d1", 2)),
		), broken},
		{"unallocated at the create's own version (no move made it)", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("unallocated", "", 1)),
		), broken},
		{"cancelled with no cancel sent", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("cancelled", "", 2)),
		), broken},
		{"a cancel answered OK after the booking was accepted", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("accepted", "d1", 3)),
			cancel(b, 4, 5, bk("cancelled", "", 4)),
		), broken},
		{"a cancel sent again refused as illegal", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancel(b, 2, 3, bk("cancelled", "", 2)),
			cancelRefused(b, 4, 5),
		), broken},
		{"a cancel sent again after an unknown one refused as illegal", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancelUnknown(b, 2, 3),
			cancelRefused(b, 4, 5),
			readBooking(b, 6, 7, bk("cancelled", "", 2)),
		), broken},
		{"a cancel sent again answered at a version the booking never had", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancel(b, 2, 3, bk("cancelled", "", 2)),
			cancel(b, 4, 5, bk("cancelled", "", 3)),
		), broken},
		{"a cancel answered done with an unallocated booking", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("unallocated", "", 2)),
			cancel(b, 4, 5, bk("unallocated", "", 2)),
		), broken},
		{"a cancel refused as illegal while the booking was still searching", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancelRefused(b, 2, 3),
			readBooking(b, 4, 5, bk("searching", "", 1)),
		), broken},
		{"a booking exists although its only create was refused", history(
			createRefused(b, 0, 1),
			readBooking(b, 2, 3, bk("searching", "", 1)),
		), broken},
	}
	runModelCases(t, BookingModel(), BookingOps, b, cases)
}

// Unknown outcomes are applied at some time after their invocation, or
// never: histories that fit either are fine.
func TestBookingUnknownOutcomesMayOrMayNotHaveHappened(t *testing.T) {
	const b = "bk-1"
	ok, broken := porcupine.Ok, porcupine.Illegal
	cases := []modelCase{
		{"an unknown create that never happened", history(
			createUnknown(b, 0, 1),
			readBookingAbsent(b, 2, 3),
		), ok},
		{"an unknown create that happened", history(
			createUnknown(b, 0, 1),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
		), ok},
		{"an unknown create that happened after it answered", history(
			createUnknown(b, 0, 1),
			readBookingAbsent(b, 2, 3),
			readBooking(b, 4, 5, bk("searching", "", 1)),
		), ok},
		{"an unconfirmed create seen, then withdrawn", history(
			createUnknown(b, 0, 1),
			readBooking(b, 2, 3, bk("searching", "", 1)),
			readBookingAbsent(b, 4, 5),
		), ok},
		{"a withdrawn booking made again by a retry", history(
			createUnknown(b, 0, 1),
			readBookingAbsent(b, 2, 3),
			create(b, 4, 5, bk("searching", "", 1)),
		), ok},
		{"an unconfirmed create cannot be withdrawn once it moved on", history(
			createUnknown(b, 0, 1),
			readBooking(b, 2, 3, bk("allocated", "d1", 2)),
			readBookingAbsent(b, 4, 5),
		), broken},
		{"an unknown cancel that happened", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancelUnknown(b, 2, 3),
			readBooking(b, 4, 5, bk("cancelled", "", 4)),
		), ok},
		{"an unknown cancel that did not happen", history(
			create(b, 0, 1, bk("searching", "", 1)),
			cancelUnknown(b, 2, 3),
			readBooking(b, 4, 5, bk("accepted", "d1", 3)),
		), ok},
		{"an unknown cancel cannot happen before its invocation", history(
			create(b, 0, 1, bk("searching", "", 1)),
			readBooking(b, 2, 3, bk("cancelled", "", 2)),
			cancelUnknown(b, 4, 5),
		), broken},
	}
	runModelCases(t, BookingModel(), BookingOps, b, cases)
}

// The final state is a last read: it must agree with what came before.
func TestBookingFinalStateIsALastRead(t *testing.T) {
	const b = "bk-1"
	h := history(
		create(b, 0, 1, bk("searching", "", 1)),
		readBooking(b, 2, 3, bk("accepted", "d1", 3)),
	)
	cases := []modelCase{
		{"the final state agrees", withFinal(h, 10, map[string]State{b: bk("accepted", "d1", 3)}, nil), porcupine.Ok},
		{"the final state changed a final status", withFinal(h, 10, map[string]State{b: bk("unallocated", "", 4)}, nil), porcupine.Illegal},
		{"the final state lost the booking", withFinal(h, 10, map[string]State{}, nil), porcupine.Illegal},
	}
	runModelCases(t, BookingModel(), BookingOps, b, cases)
}

func runModelCases(t *testing.T, m porcupine.Model, ops func(History) map[string][]porcupine.Operation, key string, cases []modelCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkOne(m, ops(c.h), key); got != c.want {
				t.Errorf("porcupine says %s, want %s", got, c.want)
			}
		})
	}
}
