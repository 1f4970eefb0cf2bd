package redisroute

import "time"

// clock is the router's time: real in production, driven by the test in
// the call state machine's table tests (hedge delays, stall and fail-fast
// thresholds, backoffs).
type clock interface {
	Now() time.Time
	// AfterFunc calls f on its own goroutine after d, unless stopped first.
	AfterFunc(d time.Duration, f func()) stopper
}

// stopper cancels a pending AfterFunc.
type stopper interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }
