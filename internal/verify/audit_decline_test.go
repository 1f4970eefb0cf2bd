package verify

import "testing"

func TestDeclinesKeptBookings(t *testing.T) {
	accepted, allocated := bk("accepted", "d1", 3), until(bk("allocated", "d1", 2), 30)
	declined := eventOK("d1", "decline", "b1", 5, 5.2, drv("available", "", false, 7))
	runAudit(t, DeclinesKeptBookings, CodeDeclineKeptBooking, []auditCase{
		{"an accepted booking still accepted after its driver backed out", history(
			readBooking("b1", 4, 4.1, accepted), declined, readBooking("b1", 6, 6.1, accepted)), 1},
		{"the same, seen in the final state", withFinal(history(readBooking("b1", 4, 4.1, accepted), declined), 20,
			map[string]State{"b1": accepted}, nil), 1},
		{"an allocated booking still allocated after its driver declined", history(
			readBooking("b1", 4, 4.1, allocated), declined, readBooking("b1", 6, 6.1, allocated)), 1},
		{"searching again after the decline", history(
			readBooking("b1", 4, 4.1, accepted), declined, readBooking("b1", 6, 6.1, bk("searching", "", 4))), 0},
		{"allocated again to the same driver at a later version", history(
			readBooking("b1", 4, 4.1, accepted), declined, readBooking("b1", 6, 6.1, until(bk("allocated", "d1", 5), 30))), 0},
		{"a read that overlaps the decline proves nothing", history(
			readBooking("b1", 4, 4.1, accepted), declined, readBooking("b1", 5.1, 6, accepted)), 0},
		{"no read before the decline: nothing to compare", history(
			declined, readBooking("b1", 6, 6.1, accepted)), 0},
		{"a decline of unknown outcome proves nothing", history(
			readBooking("b1", 4, 4.1, accepted), eventUnknown("d1", "decline", "b1", 5, 5.2), readBooking("b1", 6, 6.1, accepted)), 0},
		{"a refused decline changes nothing", history(
			readBooking("b1", 4, 4.1, accepted), eventRefused("d1", "decline", "b1", 5, 5.2), readBooking("b1", 6, 6.1, accepted)), 0},
		{"another driver's decline", history(
			readBooking("b1", 4, 4.1, accepted), eventOK("d2", "decline", "b1", 5, 5.2, drv("available", "", false, 7)), readBooking("b1", 6, 6.1, accepted)), 0},
	})
}
