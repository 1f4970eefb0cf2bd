package redisroute

import "sync/atomic"

// budget lets extra requests (hedges, retries) be at most a fraction of
// normal ones, plus a burst: each normal request earns `ratio` of a token,
// each extra request spends a whole one. Without it a slow cluster would be
// hit by a multiple of its load exactly when it can least take it.
type budget struct {
	milli    atomic.Int64 // tokens × 1000
	earn     int64
	capMilli int64
}

func newBudget(ratio float64, burst int) *budget {
	b := &budget{earn: int64(ratio * 1000), capMilli: int64(burst) * 1000}
	b.milli.Store(b.capMilli)
	return b
}

func (b *budget) deposit(n int) {
	for {
		cur := b.milli.Load()
		next := min(cur+b.earn*int64(n), b.capMilli)
		if cur >= b.capMilli || b.milli.CompareAndSwap(cur, next) {
			return
		}
	}
}

func (b *budget) withdraw() bool {
	for {
		cur := b.milli.Load()
		if cur < 1000 {
			return false
		}
		if b.milli.CompareAndSwap(cur, cur-1000) {
			return true
		}
	}
}

// refund gives back a token withdrawn and not spent.
func (b *budget) refund() {
	for {
		cur := b.milli.Load()
		if b.milli.CompareAndSwap(cur, min(cur+1000, b.capMilli)) {
			return
		}
	}
}
