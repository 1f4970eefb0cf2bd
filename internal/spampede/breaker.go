package spampede

import (
	"sync"
	"time"
)

// breaker stops admission from waiting on a store that keeps failing: after
// `failures` failures in a row it opens for `cooldown`, then lets one
// request through to test the store again.
type breaker struct {
	failures int
	cooldown time.Duration

	mu       sync.Mutex
	streak   int
	openTill time.Time
	probing  bool
}

func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.streak < b.failures {
		return true
	}
	if now.Before(b.openTill) || b.probing {
		return false
	}
	b.probing = true // half open: this one request tests the store
	return true
}

// open reports whether the breaker turns requests away now, without taking
// the half-open probe, which is admission's to take.
func (b *breaker) open(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streak >= b.failures && (now.Before(b.openTill) || b.probing)
}

func (b *breaker) record(now time.Time, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	if ok {
		b.streak = 0
		return
	}
	b.streak++
	if b.streak >= b.failures {
		b.openTill = now.Add(b.cooldown)
	}
}
