package booking

import (
	"hash/fnv"
	"sync"
	"time"
)

// retries is when each booking that found no driver is tried again. A
// booking that just missed will almost surely miss again a moment later:
// its area has more riders than drivers. Trying it every scan spends a
// nearby search (tens of Redis commands) per booking per second on that,
// and a spike's worth of such bookings costs every other rider latency.
// So the gap doubles after each miss, up to a cap, and never passes the
// booking's deadline. Each gap is spread by ±25 %, by booking, so that a
// burst of bookings created together does not retry in step.
//
// The schedule is this process's memory only: another process, or this
// one after a restart, starts a booking over at the shortest gap.
type retries struct {
	min, max time.Duration

	mu  sync.Mutex
	due map[string]retry
}

type retry struct {
	at  time.Time
	gap time.Duration
}

func newRetries(minGap, maxGap time.Duration) *retries {
	return &retries{min: minGap, max: maxGap, due: map[string]retry{}}
}

// missed schedules the next attempt of a booking whose attempt at now
// found no driver.
func (r *retries) missed(id string, now, deadline time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gap := r.min
	if old, ok := r.due[id]; ok {
		gap = min(2*old.gap, r.max)
	}
	at := now.Add(spread(id, gap))
	if deadline.Before(at) {
		at = deadline
	}
	r.due[id] = retry{at: at, gap: gap}
}

// isDue reports whether a booking may be tried at now: it has no attempt
// scheduled, or its time has come.
func (r *retries) isDue(id string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.due[id]
	return !ok || !now.Before(e.at)
}

// forget drops a booking's schedule: it got a driver, ended, or must be
// tried at once (its driver declined).
func (r *retries) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.due, id)
}

// prune drops schedules long past due: bookings that left the open index
// through another process. A booking that is still open only loses its
// backoff, and starts again at the shortest gap.
func (r *retries) prune(now time.Time, olderThan time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, e := range r.due {
		if now.Sub(e.at) > olderThan {
			delete(r.due, id)
		}
	}
}

// spread scales gap into [0.75, 1.25) × gap, by a fraction fixed per booking.
func spread(id string, gap time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(id))
	frac := float64(h.Sum64()%1024) / 1024
	return time.Duration(float64(gap) * (0.75 + frac/2))
}
