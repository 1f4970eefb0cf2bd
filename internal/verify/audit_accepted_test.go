package verify

import "testing"

func TestAcceptedUnasked(t *testing.T) {
	accepted := bk("accepted", "d1", 3)
	runAudit(t, AcceptedUnasked, CodeAcceptedUnasked, []auditCase{
		{"accepted after its driver's accept", history(
			eventOK("d1", "accept", "b1", 1, 1.1, drv("reserved", "b1", true, 4)), readBooking("b1", 2, 2.1, accepted)), 0},
		{"accepted while its driver's accept ran (outcome unknown)", history(
			eventUnknown("d1", "accept", "b1", 1, 3), readBooking("b1", 2, 2.1, accepted)), 0},
		{"an accept answered 409 may still have been recorded", history(
			eventRefused("d1", "accept", "b1", 1, 1.1), readBooking("b1", 2, 2.1, accepted)), 0},
		{"an accept of the driver's current booking", history(
			eventOK("d1", "accept", "", 1, 1.1, drv("reserved", "b1", true, 4)), readBooking("b1", 2, 2.1, accepted)), 0},
		{"accepted with no accept at all", history(readBooking("b1", 2, 2.1, accepted)), 1},
		{"accepted before its driver's accept was sent", history(
			readBooking("b1", 2, 2.1, accepted), eventOK("d1", "accept", "b1", 3, 3.1, drv("reserved", "b1", true, 4))), 1},
		{"accepted by a driver who accepted another booking", history(
			eventOK("d1", "accept", "b2", 1, 1.1, drv("reserved", "b2", true, 4)), readBooking("b1", 2, 2.1, accepted)), 1},
		{"accepted in the final state, no accept", withFinal(history(), 20, map[string]State{"b1": accepted}, nil), 1},
		{"one violation a booking and driver", history(readBooking("b1", 2, 2.1, accepted), readBooking("b1", 3, 3.1, accepted)), 1},
	})
}

func TestReopenedUnasked(t *testing.T) {
	accepted := bk("accepted", "d1", 3)
	runAudit(t, ReopenedUnasked, CodeReopenedUnasked, []auditCase{
		{"searching again after its driver backed out", history(
			readBooking("b1", 1, 1.1, accepted), eventOK("d1", "decline", "b1", 2, 2.1, drv("available", "", false, 6)),
			readBooking("b1", 3, 3.1, bk("searching", "", 4))), 0},
		{"a back-out answered 409 may have let it go", history(
			readBooking("b1", 1, 1.1, accepted), eventRefused("d1", "decline", "b1", 2, 2.1), readBooking("b1", 3, 3.1, bk("searching", "", 4))), 0},
		{"a back-out still running when the booking was read", history(
			readBooking("b1", 1, 1.1, accepted), eventUnknown("d1", "decline", "b1", 2, 5), readBooking("b1", 3, 3.1, bk("searching", "", 4))), 0},
		{"searching again with no back-out", history(
			readBooking("b1", 1, 1.1, accepted), readBooking("b1", 3, 3.1, bk("searching", "", 4))), 1},
		{"unallocated in the final state with no back-out", withFinal(history(readBooking("b1", 1, 1.1, accepted)), 20,
			map[string]State{"b1": bk("unallocated", "", 5)}, nil), 1},
		{"the back-out came after the read that shows it moved", history(
			readBooking("b1", 1, 1.1, accepted), readBooking("b1", 3, 3.1, bk("searching", "", 4)),
			eventOK("d1", "decline", "b1", 4, 4.1, drv("available", "", false, 6))), 1},
		{"another driver's decline", history(
			readBooking("b1", 1, 1.1, accepted), eventOK("d2", "decline", "b1", 2, 2.1, drv("available", "", false, 6)),
			readBooking("b1", 3, 3.1, bk("searching", "", 4))), 1},
		{"still accepted, same version", history(readBooking("b1", 1, 1.1, accepted), readBooking("b1", 3, 3.1, accepted)), 0},
		{"reads that overlap prove nothing", history(
			readBooking("b1", 1, 2, accepted), readBooking("b1", 1.5, 2.5, bk("searching", "", 4))), 0},
	})
}

func TestUnacceptedUnasked(t *testing.T) {
	accepted, withdrawn := drv("reserved", "b1", true, 3), drv("reserved", "b1", false, 4)
	runAudit(t, UnacceptedUnasked, CodeUnacceptedUnasked, []auditCase{
		{"withdrawn while its driver backed out", history(
			readDriver("d1", 1, 1.1, accepted), eventUnknown("d1", "decline", "b1", 2, 5), readDriver("d1", 3, 3.1, withdrawn)), 0},
		{"withdrawn with no back-out", history(readDriver("d1", 1, 1.1, accepted), readDriver("d1", 3, 3.1, withdrawn)), 1},
		{"withdrawn in the final state with no back-out", withFinal(history(readDriver("d1", 1, 1.1, accepted)), 20,
			nil, map[string]State{"d1": withdrawn}), 1},
		{"the back-out came after", history(
			readDriver("d1", 1, 1.1, accepted), readDriver("d1", 3, 3.1, withdrawn), eventOK("d1", "decline", "b1", 4, 4.1, drv("available", "", false, 5))), 1},
		{"a decline of another booking", history(
			readDriver("d1", 1, 1.1, accepted), eventRefused("d1", "decline", "b0", 2, 2.1), readDriver("d1", 3, 3.1, withdrawn)), 1},
		{"reserved before the accept (an older version)", history(
			readDriver("d1", 1, 1.1, drv("reserved", "b1", false, 2)), readDriver("d1", 3, 3.1, accepted)), 0},
		{"reserved again for another booking", history(
			readDriver("d1", 1, 1.1, accepted), readDriver("d1", 3, 3.1, drv("reserved", "b2", false, 7))), 0},
	})
}

func TestTripBookingsMoved(t *testing.T) {
	started := eventOK("d1", "start_trip", "b1", 2, 2.1, drv("on_trip", "b1", false, 5))
	runAudit(t, TripBookingsMoved, CodeTripBookingMoved, []auditCase{
		{"accepted with its driver after the trip started", history(started, readBooking("b1", 3, 3.1, bk("accepted", "d1", 3))), 0},
		{"searching after the trip started", history(started, readBooking("b1", 3, 3.1, bk("searching", "", 4))), 1},
		{"allocated to another driver in the final state", withFinal(history(started), 20,
			map[string]State{"b1": until(bk("allocated", "d2", 5), 30)}, nil), 1},
		{"a read asked for before the trip's answer proves nothing", history(started, readBooking("b1", 2.05, 2.2, bk("searching", "", 4))), 0},
		{"a start_trip of unknown outcome proves nothing", history(eventUnknown("d1", "start_trip", "b1", 2, 2.1),
			readBooking("b1", 3, 3.1, bk("searching", "", 4))), 0},
	})
}
