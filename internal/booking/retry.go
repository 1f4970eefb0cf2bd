package booking

import (
	"hash/fnv"
	"time"
)

// retryGap is how long a booking that found no driver at now waits before
// it is tried again. A booking that just missed will almost surely miss
// again a moment later: its area has more riders than drivers. Trying it
// every scan spends a nearby search (tens of Redis commands) per booking
// per second on that, and a spike's worth of such bookings costs every
// other rider latency. So the gap grows with the booking's age — twice
// the time it has searched, from minGap up to maxGap, which makes the
// gaps double after each miss (1 s, 2 s, 4 s, 4 s … with the defaults) —
// and never passes its deadline. Each gap is spread by ±25 %, by
// booking, so that a burst of bookings created together does not retry in
// step. It depends on the booking alone, so any instance computes the
// same schedule: none is kept in memory.
func retryGap(b Booking, now time.Time, minGap, maxGap time.Duration) time.Time {
	gap := min(max(2*now.Sub(b.CreatedAt), minGap), maxGap)
	at := now.Add(spread(b.ID, gap))
	if b.Deadline.Before(at) {
		at = b.Deadline
	}
	return at
}

// spread scales gap into [0.75, 1.25) × gap, by a fraction fixed per booking.
func spread(id string, gap time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(id))
	frac := float64(h.Sum64()%1024) / 1024
	return time.Duration(float64(gap) * (0.75 + frac/2))
}
