package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
)

// waitQuery is the optional long poll of GET /v1/bookings/{id}:
// ?wait=<duration>[&version=<n>].
type waitQuery struct {
	wait       time.Duration // 0: answer at once
	version    int64         // the version the client has seen
	hasVersion bool          // false: the booking's current version
}

func (a *api) waitQuery(raw string) (waitQuery, error) {
	q, err := parseQuery(raw, "wait", "version")
	if err != nil {
		return waitQuery{}, err
	}
	var wq waitQuery
	if s, ok := q.lookup("wait"); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > a.cfg.MaxWait {
			return waitQuery{}, invalid("wait", "must be a duration within (0s, %s], such as 5s", a.cfg.MaxWait)
		}
		wq.wait = d
	}
	if s, ok := q.lookup("version"); ok {
		if wq.wait == 0 {
			return waitQuery{}, invalid("version", "is only allowed with wait")
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return waitQuery{}, invalid("version", "must be an integer of at least 0")
		}
		wq.version, wq.hasVersion = n, true
	}
	return wq, nil
}

// getBooking returns one booking, or not_found. With ?wait= it is a long
// poll: it answers as soon as the booking's version differs from the one
// the client has seen, or when the wait is over, with the booking as it
// is then.
func (a *api) getBooking(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wq, err := a.waitQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var b booking.Booking
	if wq.wait == 0 {
		b, err = a.bookings.Get(r.Context(), id)
	} else {
		b, err = a.longPoll(r.Context(), id, wq)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, newBookingJSON(b))
}

// longPoll waits up to wq.wait for the booking to change. Without a
// version the client has seen, it reads the booking first and waits for
// a change from that; a final booking never changes, so it is returned at
// once. Running out of time is not an error.
func (a *api) longPoll(ctx context.Context, id string, wq waitQuery) (booking.Booking, error) {
	seen := wq.version
	if !wq.hasVersion {
		b, err := a.bookings.Get(ctx, id)
		if err != nil || b.Status.Final() {
			return b, err
		}
		seen = b.Version
	}
	wctx, cancel := context.WithTimeout(ctx, wq.wait)
	defer cancel()
	if a.stopping != nil {
		// The server is shutting down: the poll ends now, answered.
		defer context.AfterFunc(a.stopping, cancel)()
	}
	b, err := a.bookings.Wait(wctx, id, seen)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		// Only the wait ran out (or was ended by the shutdown), and Wait
		// reported that rather than returning the booking as it is: read
		// it now.
		return a.bookings.Get(ctx, id)
	}
	return b, err
}
