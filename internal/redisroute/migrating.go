package redisroute

import (
	"sync"
	"time"
)

// migratingPause is how long a slot may go without an ASK or TRYAGAIN and
// still be the same migration.
const migratingPause = time.Minute

// migratingSlots tells how long each slot has kept answering ASK or
// TRYAGAIN: a reshard moves a slot in seconds, while one left open (a
// reshard interrupted) keeps its slot split for as long as nobody finishes
// it, and Apollo's commands across the split never run. The gauge
// apollo_redis_slot_migrating_seconds is the longest of them.
type migratingSlots struct {
	mu    sync.Mutex
	slots map[int]migratingSpan
}

type migratingSpan struct{ first, last time.Time }

// seen records an ASK or TRYAGAIN for slot at now.
func (m *migratingSlots) seen(slot int, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.slots == nil {
		m.slots = map[int]migratingSpan{}
	}
	s, ok := m.slots[slot]
	if !ok || now.Sub(s.last) > migratingPause {
		s.first = now
	}
	s.last = now
	m.slots[slot] = s
}

// longest is how long the slot that has kept redirecting longest has, as
// of now; slots quiet for migratingPause are forgotten.
func (m *migratingSlots) longest(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var most time.Duration
	for slot, s := range m.slots {
		if now.Sub(s.last) > migratingPause {
			delete(m.slots, slot)
			continue
		}
		most = max(most, s.last.Sub(s.first))
	}
	return most
}
