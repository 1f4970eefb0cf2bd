package redisroute

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A node that goes busy after an idle spell is not stalled at any instant:
// whoever looks at it while its first request is being sent (a read's
// choice of node, the watchdog) sees the stamp of its going busy, never a
// request in flight since its last answer long ago. Seen that way, an idle
// healthy node was passed over by a hedge, or ejected by the watchdog.
func TestANodeGoingBusyAfterAnIdleSpellIsNeverStalled(t *testing.T) {
	const stallAfter, idle = 80 * time.Millisecond, time.Second
	n := &node{}
	var now atomic.Int64 // the time of the request being sent
	var seen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n.stalled(time.Unix(0, now.Load()), stallAfter, 0) {
				seen.Add(1)
			}
		}
	}()
	for i := range 20_000 {
		at := time.Unix(0, 0).Add(time.Duration(i+1) * idle)
		now.Store(at.UnixNano())
		n.begin(at)
		n.end(at, 0, false) // unanswered: its end is no progress
	}
	close(stop)
	wg.Wait()
	if k := seen.Load(); k > 0 {
		t.Errorf("a node going busy looked stalled %d times", k)
	}
}
