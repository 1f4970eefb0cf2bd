package httpapi_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
)

// A shutdown must not wait out the longest poll: once Stopping is closed,
// a waiting long poll answers at once, 200 with the booking as it is.
func TestAShutdownEndsALongPollWithTheBookingAsItIs(t *testing.T) {
	f := newFakeBookings(seedBookings()...)
	f.waiting = make(chan struct{}, 1)
	stopping, stop := context.WithCancel(context.Background())
	h, err := httpapi.New(httpapi.DefaultConfig(), httpapi.Deps{Drivers: newFake(), Bookings: f, Rules: driver.DefaultRules(), Stopping: stopping})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/bookings/bk-search?wait=30s", nil))
	}()
	<-f.waiting // the poll is waiting for a change
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // far below the 30 s wait: a logic bound, not a timing one
		t.Fatal("the long poll went on after the server began to stop")
	}
	if rec.Code != 200 {
		t.Fatalf("status %d, body %s; want 200", rec.Code, rec.Body)
	}
	wantBooking("bk-search", booking.Searching, 1)(t, rec, f)
}
