package verify

import (
	"testing"
	"time"
)

// A booking's deadline, once a create of it was answered, never moves; a
// reservation an answer shows ends within the TTL (3 s here) of that
// answer, within clockTolerance. The other audits measure lateness from
// these times, so a wrong one would hide what they look for.
func TestTimesOutOfBounds(t *testing.T) {
	ttl := func(h History) History { h.ReservationTTL = 3 * time.Second; return h }
	created := create("b1", 0.5, 0.55, due(bk("searching", "", 1), 10.5))
	runAudit(t, TimesOutOfBounds, CodeTimeOutOfBounds, []auditCase{
		{"the deadline the create answered, read again", ttl(history(created, readBooking("b1", 5, 5.1, due(bk("searching", "", 1), 10.5)))), 0},
		{"a deadline moved on after the create", ttl(history(created, readBooking("b1", 5, 5.1, due(bk("searching", "", 1), 100)))), 1},
		{"a deadline moved in the final state", ttl(withFinal(history(created), 80, map[string]State{"b1": due(bk("searching", "", 2), 100)}, nil)), 1},
		{"a read before the create was answered: an unconfirmed first attempt, withdrawn since",
			ttl(history(readBooking("b1", 0.1, 0.2, due(bk("searching", "", 1), 9)), create("b1", 0.5, 1, due(bk("searching", "", 1), 10.5)))), 0},
		{"a reservation of the TTL", ttl(history(readDriver("d1", 1, 1.1, until(drv("reserved", "b1", false, 2), 4)))), 0},
		{"a reservation of ten minutes", ttl(history(readDriver("d1", 1, 1.1, until(drv("reserved", "b1", false, 2), 600)))), 1},
		{"a booking allocated for ten minutes", ttl(history(readBooking("b1", 1, 1.1, until(bk("allocated", "d1", 2), 600)))), 1},
		{"one in the final state", ttl(withFinal(history(), 80, nil, map[string]State{"d1": until(drv("reserved", "b1", false, 5), 600)})), 1},
		{"one violation a driver", ttl(history(readDriver("d1", 1, 1.1, until(drv("reserved", "b1", false, 2), 600)),
			readDriver("d1", 2, 2.1, until(drv("reserved", "b1", false, 2), 600)))), 1},
	})
}
