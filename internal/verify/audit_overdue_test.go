package verify

import (
	"testing"
	"time"
)

// A reservation seen alive, not accepted, past its end by more than the
// slack and the read's lag is overdue, unless no stretch of the slack
// between its end and the read was free of faults that may stop writes.
// history() has a 2 s slack; the lag here is 1 s, so a read invoked more
// than 3 s after the end, with no such fault, is overdue. The run has one
// instance: its own faults stop the sweep (TestAnotherInstanceSweepsWhileOneIsDown).
func TestOverdueReservationsSeeASweepThatFreesDriversLate(t *testing.T) {
	reserved := until(drv("reserved", "b1", false, 2), 10)
	window := func(kind string, from, to float64) []FaultEvent {
		return []FaultEvent{{Kind: kind, Fault: kind + " x", Action: "inject", At: sec(from)}, {Kind: kind, Fault: kind + " x", Action: "heal", At: sec(to)}}
	}
	for _, tc := range []struct {
		name   string
		read   Op
		faults []FaultEvent
		want   int
	}{
		{"read within the slack and the lag", readDriver("d1", 12.9, 13, reserved), nil, 0},
		{"read past them", readDriver("d1", 13.5, 13.6, reserved), nil, 1},
		{"accepted: it never expires", readDriver("d1", 20, 20.1, until(drv("reserved", "b1", true, 3), 10)), nil, 0},
		{"no end recorded", readDriver("d1", 20, 20.1, drv("reserved", "b1", false, 2)), nil, 0},
		{"available", readDriver("d1", 20, 20.1, drv("available", "", false, 3)), nil, 0},
		{"a primary hung meanwhile: its shard could not be written", readDriver("d1", 20, 20.1, reserved), window("primary-hang", 12, 18), 0},
		{"a primary hung meanwhile, healed more than the slack before the read", readDriver("d1", 20, 20.1, reserved), window("primary-hang", 12, 15), 1},
		{"a short hang just after the end, the read long after", readDriver("d1", 60, 60.1, reserved), window("primary-hang", 10.5, 11), 1},
		{"two faults, the calm between them shorter than the slack", readDriver("d1", 20, 20.1, reserved),
			append(window("primary-hang", 10, 12), window("primary-crash", 13.5, 18)...), 0},
		{"an instance killed with a failover meanwhile", readDriver("d1", 20, 20.1, reserved), window("instance-kill+primary-crash", 5, 18), 0},
		{"an instance killed with a failover, healed long before the read", readDriver("d1", 20, 20.1, reserved), window("instance-kill+primary-crash", 5, 11), 1},
		{"a replica crashed meanwhile: writes went on", readDriver("d1", 20, 20.1, reserved), window("replica-crash", 12, 15), 1},
		{"an instance killed meanwhile, healed more than the slack before the read", readDriver("d1", 20, 20.1, reserved), window("instance-kill", 12, 15), 1},
		{"a fault that ended before the reservation did", readDriver("d1", 20, 20.1, reserved), window("primary-hang", 2, 8), 1},
		{"one instance, killed from the end to just before the read", readDriver("d1", 20, 20.1, reserved), window("instance-kill", 10.5, 18.5), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history(tc.read)
			h.Faults, h.readLag, h.Instances = tc.faults, time.Second, 1
			if got := OverdueReservations(h); len(got) != tc.want {
				t.Errorf("got %d violations %+v, want %d", len(got), got, tc.want)
			}
		})
	}
}

// With another instance, one instance's fault stops no sweep: the other
// takes its partitions over within the slack.
func TestAnotherInstanceSweepsWhileOneIsDown(t *testing.T) {
	h := history(readDriver("d1", 20, 20.1, until(drv("reserved", "b1", false, 2), 10)))
	h.Faults = []FaultEvent{{Kind: "instance-kill", Fault: "instance-kill x", Action: "inject", At: sec(10.5)}, {Kind: "instance-kill", Fault: "instance-kill x", Action: "heal", At: sec(18.5)}}
	h.readLag, h.Instances = time.Second, 2
	if got := OverdueReservations(h); len(got) != 1 {
		t.Errorf("got %d violations %+v, want 1", len(got), got)
	}
}

// A reservation withdrawn (its driver backing out of it, once accepted:
// an accepted reservation never expires) is not accepted only since the
// back-out, so it is judged from the back-out's end when that is later
// than the reservation's; without a back-out in the history, from its end.
func TestAWithdrawnReservationIsJudgedFromItsBackOut(t *testing.T) {
	withdrawn := until(drv("reserved", "b1", false, 4), 10)
	withdrawn.Withdrawn = true
	backOut := by(eventUnknown("d1", "decline", "b1", 29, 29.5), 30) // lands by its deadline
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"read within the slack and the lag of the back-out", []Op{backOut, readDriver("d1", 32.9, 33, withdrawn)}, 0},
		{"read past them", []Op{backOut, readDriver("d1", 33.5, 33.6, withdrawn)}, 1},
		{"no back-out recorded: from its end", []Op{readDriver("d1", 32.9, 33, withdrawn)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history(tc.ops...)
			h.readLag, h.Instances = time.Second, 1
			if got := OverdueReservations(h); len(got) != tc.want {
				t.Errorf("got %d violations %+v, want %d", len(got), got, tc.want)
			}
		})
	}
}
