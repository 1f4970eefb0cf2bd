package redisroute

import (
	"testing"
	"time"
)

// A slot that keeps redirecting grows; one that stops is forgotten after a
// minute's pause; a reshard's slots, each moved in seconds, stay short.
func TestASlotThatKeepsRedirectingIsTheLongest(t *testing.T) {
	var m migratingSlots
	t0 := time.Unix(1_000, 0)
	for s := range 30 { // a reshard: slot after slot, each for 2 s
		for k := range 3 {
			now := t0.Add(time.Duration(2*s+k) * time.Second)
			m.seen(100+s, now)
		}
	}
	if got := m.longest(t0.Add(61 * time.Second)); got != 2*time.Second {
		t.Errorf("a reshard's slots: longest %s, want 2s", got)
	}
	for i := range 20 { // a slot left open, hit every 50 s
		m.seen(7, t0.Add(time.Duration(i)*50*time.Second))
	}
	if got := m.longest(t0.Add(19 * 50 * time.Second)); got != 19*50*time.Second {
		t.Errorf("a slot left open: longest %s, want %s", got, 19*50*time.Second)
	}
	m.seen(7, t0.Add(19*50*time.Second+2*time.Minute)) // after a pause of two minutes: a new one
	if got := m.longest(t0.Add(19*50*time.Second + 2*time.Minute)); got != 0 {
		t.Errorf("after a pause: longest %s, want 0", got)
	}
	if len(m.slots) != 1 {
		t.Errorf("%d slots kept, want the one still redirecting", len(m.slots))
	}
}
