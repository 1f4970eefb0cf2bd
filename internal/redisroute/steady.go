package redisroute

import "time"

// steady is the clock the router keeps the cluster's time on: this
// process's wall clock (Config.Wall) as read once, when the router
// started, moved on by the monotonic clock. A host clock that steps (an
// NTP step, a VM resumed elsewhere, a date -s) does not move it, so
// neither the cluster's time (Now) nor the deadlines sent to Redis jump
// with it; the nodes' clocks, read against it every check, correct its
// slow drift.
type steady struct {
	wall time.Time // the wall clock at the start, without a monotonic reading
	mono time.Time // time.Now at the start, with one
}

func newSteady(wall func() time.Time) steady {
	return steady{wall: wall().Round(0), mono: time.Now()}
}

// now is the wall clock as it was at the start, plus the monotonic time
// since. It carries no monotonic reading: compared with another time, it
// is by the wall.
func (s steady) now() time.Time { return s.wall.Add(time.Since(s.mono)) }
