package verify

import "testing"

// What Apollo's workers can do to a booking or a driver between two
// client operations, one version per move.
func TestLifecycleReach(t *testing.T) {
	at := func(status, ref string, v int64) node {
		return node{Exists: true, Status: status, Ref: ref, Version: v}
	}
	cases := []struct {
		name string
		life *lifecycle
		from node
		to   seen
		want bool
	}{
		{"a booking stays as it is", bookingLife, at("searching", "", 1), seen{"searching", "", 1}, true},
		{"searching is allocated to some driver", bookingLife, at("searching", "", 1), seen{"allocated", "d1", 2}, true},
		{"searching gives up", bookingLife, at("searching", "", 1), seen{"unallocated", "", 2}, true},
		{"searching is accepted two moves on", bookingLife, at("searching", "", 1), seen{"accepted", "d1", 3}, true},
		{"searching again after a lapsed reservation", bookingLife, at("searching", "", 1), seen{"searching", "", 3}, true},
		{"allocated again, to another driver, after searching", bookingLife, at("allocated", "d1", 2), seen{"allocated", "d2", 4}, true},
		{"accepted by another driver after searching again", bookingLife, at("allocated", "d1", 2), seen{"accepted", "d2", 5}, true},
		{"a decline writes a booking already searching", bookingLife, at("searching", "", 1), seen{"searching", "", 2}, true},
		{"no move leaves a version unchanged", bookingLife, at("allocated", "d1", 2), seen{"allocated", "d1", 3}, false},
		{"no version goes back", bookingLife, at("allocated", "d1", 2), seen{"searching", "", 1}, false},
		{"accepted one move on keeps the driver", bookingLife, at("allocated", "d1", 2), seen{"accepted", "d2", 3}, false},
		{"the workers never cancel", bookingLife, at("searching", "", 1), seen{"cancelled", "", 2}, false},
		{"a final booking never moves", bookingLife, at("unallocated", "", 3), seen{"unallocated", "", 5}, false},
		{"an accepted booking searches again when its driver backs out", bookingLife, at("accepted", "d1", 3), seen{"searching", "", 4}, true},
		{"an accepted booking is accepted again only after searching", bookingLife, at("accepted", "d1", 3), seen{"accepted", "d1", 5}, false},
		{"an accepted booking is accepted again, by a driver found after searching", bookingLife, at("accepted", "d1", 3), seen{"accepted", "d2", 6}, true},
		{"a set of versions: cancelled at some version from 3 on", bookingLife,
			node{Exists: true, Status: "cancelled", Version: 3, Every: 1}, seen{"cancelled", "", 7}, true},
		{"a set of versions has a least one", bookingLife,
			node{Exists: true, Status: "cancelled", Version: 3, Every: 1}, seen{"cancelled", "", 2}, false},
		{"a driver is reserved for some booking", driverLife, at("available", "", 1), seen{"reserved", "b1", 2}, true},
		{"an accepted reservation is freed by the sweep, then another made", driverLife, at(driverAccepted, "b1", 3), seen{"reserved", "b2", 5}, true},
		{"only an accept makes an accepted reservation", driverLife, at(driverAccepted, "b1", 3), seen{driverAccepted, "b2", 5}, false},
		{"a back-out withdraws an accept, keeping the reservation", driverLife, at(driverAccepted, "b1", 3), seen{"reserved", "b1", 4}, true},
		{"a withdrawn accept keeps its booking", driverLife, at(driverAccepted, "b1", 3), seen{"reserved", "b2", 4}, false},
		{"a reservation is not moved to another booking in one move", driverLife, at("reserved", "b1", 2), seen{"reserved", "b2", 3}, false},
		{"the workers never take a driver off line", driverLife, at("available", "", 1), seen{"offline", "", 2}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.life.reaches(c.from, c.to); got != c.want {
				t.Errorf("%s reaches %+v: %t, want %t", describeNode(c.from), c.to, got, c.want)
			}
		})
	}
}
