package clustercheck

import (
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// clockFindings names each node whose clock certainly differs from this
// machine's by more than redisroute.ClockSkewWarn. Run from an Apollo
// host, that is the skew Apollo's router measures and moves write
// deadlines by. When every reachable node is off and they agree with each
// other, it is this machine's clock that is off, which is said once more.
func clockFindings(nodes []Node) []Finding {
	var out []Finding
	var read []redisroute.NodeClock
	reachable := 0
	for _, n := range nodes {
		if !n.Reachable {
			continue
		}
		reachable++
		if n.Clock == nil {
			continue
		}
		read = append(read, *n.Clock)
		if !n.Clock.Skewed(redisroute.ClockSkewWarn) {
			continue
		}
		out = append(out, Finding{Severity: Warning, Code: "clock_skew", Node: n.Addr,
			Message: fmt.Sprintf("its clock is %s from this machine's (± %s): the node expires keys (bookings, reservations, leases) by its clock, and Apollo moves write deadlines by what it measures; fix NTP on the host that is off",
				signed(n.Clock.Offset), n.Clock.Uncertainty.Round(time.Millisecond))})
	}
	if len(out) > 1 && len(out) == reachable && agree(read) {
		out = append(out, Finding{Severity: Warning, Code: "clock_skew",
			Message: "every node's clock is off from this machine's, and they agree with each other: it is this machine's clock that is off (an Apollo host with it would see the same)"})
	}
	return out
}

// agree reports whether no two clocks can be more than
// redisroute.ClockSkewWarn apart.
func agree(cs []redisroute.NodeClock) bool {
	for _, a := range cs {
		for _, b := range cs {
			if a.Offset+a.Uncertainty-(b.Offset-b.Uncertainty) > redisroute.ClockSkewWarn {
				return false
			}
		}
	}
	return true
}

// signed is d rounded to the millisecond, with its sign: "+2.5s", "-90ms".
func signed(d time.Duration) string {
	s := d.Round(time.Millisecond).String()
	if d > 0 {
		s = "+" + s
	}
	return s
}
