package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// DeadlineHeader is the optional header by which a client tells when it
// stops waiting for a write's answer, in unix milliseconds. A write of
// Apollo's takes effect before its request's deadline or never (the
// scripts that write records refuse once Redis's clock is past it; see
// redisstore.ErrLate), so a client that got no answer, or a 503, knows
// the outcome by reading after its deadline, and no retransmitted command
// lands later. Without the header the deadline is RequestTimeout after
// the request arrived, which the client cannot know exactly.
const DeadlineHeader = "Apollo-Deadline"

// errDeadlinePassed: the request arrived after its Apollo-Deadline.
var errDeadlinePassed = errors.New("the request's Apollo-Deadline had passed when it arrived")

// bounded gives a write request its deadline: the client's Apollo-Deadline
// when it has one, at most RequestTimeout from now. A request that arrives
// past its deadline is refused before anything is done. Its writes are
// tracked, so that a failure can say when none of them took effect. Long polls are
// reads with their own bound (MaxWait) and are not wrapped.
func (a *api) bounded(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Whether anything was written, for a failure's answer (fail).
		tracked, _ := redisroute.TrackWrites(r.Context())
		now := time.Now() // a deadline is on the real clock, as the context's timer
		deadline := now.Add(a.cfg.RequestTimeout)
		if v := r.Header.Get(DeadlineHeader); v != "" {
			d, err := parseDeadline(v)
			if err != nil {
				a.fail(w, r, err)
				return
			}
			d = d.Add(-a.clockAhead()) // from the cluster's time onto this host's
			if !now.Before(d) {
				a.fail(w, r.WithContext(tracked), errDeadlinePassed)
				return
			}
			if d.Before(deadline) {
				deadline = d
			}
		}
		ctx, cancel := context.WithDeadline(tracked, deadline)
		defer cancel()
		next(w, r.WithContext(ctx))
	}
}

// parseDeadline reads an Apollo-Deadline value: unix milliseconds, a
// positive integer.
func parseDeadline(v string) (time.Time, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, invalid(DeadlineHeader, "must be a time in unix milliseconds, like %d", time.Now().Add(3*time.Second).UnixMilli())
	}
	return time.UnixMilli(ms), nil
}
