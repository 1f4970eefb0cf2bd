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
