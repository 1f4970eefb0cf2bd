package drill

import (
	"sync/atomic"
	"time"
)

// liveCounters feed the per-second progress line while the run goes on.
type liveCounters struct {
	calls, ok, maxNs []atomic.Int64
}

func newLiveCounters(d time.Duration) *liveCounters {
	n := int(d/time.Second) + 2
	return &liveCounters{calls: make([]atomic.Int64, n), ok: make([]atomic.Int64, n), maxNs: make([]atomic.Int64, n)}
}

func (l *liveCounters) add(at, lat time.Duration, ok bool) {
	s := min(int(at/time.Second), len(l.calls)-1)
	l.calls[s].Add(1)
	if ok {
		l.ok[s].Add(1)
	}
	for {
		cur := l.maxNs[s].Load()
		if int64(lat) <= cur || l.maxNs[s].CompareAndSwap(cur, int64(lat)) {
			return
		}
	}
}

func (l *liveCounters) second(s int, plan Plan) Second {
	return Second{
		T:       s,
		Calls:   int(l.calls[s].Load()),
		OKCalls: int(l.ok[s].Load()),
		MaxMs:   ms(time.Duration(l.maxNs[s].Load())),
		Fault:   faultDuring(plan, s),
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
