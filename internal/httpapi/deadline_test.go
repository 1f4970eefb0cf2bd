package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/httpapi"
)

// TestAWriteRunsUntilItsDeadline: a write request reaches the store with a
// deadline, the client's Apollo-Deadline when it brings an earlier one
// than RequestTimeout from now; a request past its deadline, or with a
// deadline that is no time, is refused before the store is called.
func TestAWriteRunsUntilItsDeadline(t *testing.T) {
	const timeout = 4 * time.Second
	ms := func(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) }
	tests := []struct {
		name       string
		header     string        // Apollo-Deadline; "" for none
		wantStatus int           // of the answer
		wantCode   httpapi.Code  // of a refusal
		wantMsg    string        // in a refusal's message
		wantIn     time.Duration // the store's deadline is within 50 ms before now + this
	}{
		{name: "no header: RequestTimeout", wantStatus: 200, wantIn: timeout},
		{name: "an earlier deadline", header: ms(time.Second), wantStatus: 200, wantIn: time.Second},
		{name: "a later deadline is capped", header: ms(time.Minute), wantStatus: 200, wantIn: timeout},
		{name: "already past", header: ms(-time.Second), wantStatus: 503, wantCode: httpapi.CodeUnavailable, wantMsg: "had passed when it arrived; nothing was done"},
		{name: "not a number", header: "soon", wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "Apollo-Deadline must be a time in unix milliseconds"},
		{name: "a fraction", header: "1796292807227.5", wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "Apollo-Deadline"},
		{name: "zero", header: "0", wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "Apollo-Deadline"},
		{name: "negative", header: "-5", wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "Apollo-Deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFake(seedDrivers()...)
			h := newHarness(t, store, func(c *httpapi.Config) { c.RequestTimeout = timeout })
			header := http.Header{}
			if tt.header != "" {
				header.Set(httpapi.DeadlineHeader, tt.header)
			}
			sent := time.Now()
			rec := h.do(request{method: "PUT", target: "/v1/drivers/drv-1/location", body: `{"lat":1.3,"lng":103.8}`, header: header})
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != 200 {
				e := decodeError(t, rec)
				if e.Error.Code != tt.wantCode || !strings.Contains(e.Error.Message, tt.wantMsg) {
					t.Errorf("error %s %q, want %s containing %q", e.Error.Code, e.Error.Message, tt.wantCode, tt.wantMsg)
				}
				if store.calls != 0 {
					t.Errorf("the store was called %d times for a refused request", store.calls)
				}
				return
			}
			want := sent.Add(tt.wantIn)
			if store.deadline.IsZero() || store.deadline.Before(want.Add(-50*time.Millisecond)) || store.deadline.After(time.Now().Add(tt.wantIn)) {
				t.Errorf("the store's deadline is %v after the request was sent, want %v", store.deadline.Sub(sent), tt.wantIn)
			}
		})
	}
}

// TestEveryWriteRouteHasADeadlineAndReadsDoNot: each write route hands its
// store the client's Apollo-Deadline; a read (a long poll among them,
// bounded by its own wait) gets none from it.
func TestEveryWriteRouteHasADeadlineAndReadsDoNot(t *testing.T) {
	deadline := time.UnixMilli(time.Now().Add(2 * time.Second).UnixMilli())
	tests := []struct {
		method, target, body string
		write                bool
	}{
		{"PUT", "/v1/drivers/drv-1/location", `{"lat":1.3,"lng":103.8}`, true},
		{"POST", "/v1/drivers/drv-off/events", `{"type":"go_online","services":["car"]}`, true},
		{"POST", "/v1/bookings", `{"rider_id":"r9","service":"car","pickup":{"lat":1.3,"lng":103.8},"dropoff":{"lat":1.31,"lng":103.85}}`, true},
		{"POST", "/v1/bookings/bk-search/cancel", "", true},
		{"GET", "/v1/drivers/drv-1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			store := newFake(seedDrivers()...)
			h := newHarness(t, store, nil)
			header := http.Header{}
			header.Set(httpapi.DeadlineHeader, strconv.FormatInt(deadline.UnixMilli(), 10))
			rec := h.do(request{method: tt.method, target: tt.target, body: tt.body, header: header})
			if rec.Code >= 300 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			got := store.deadline
			if strings.Contains(tt.target, "/v1/bookings") {
				got = h.bookings.deadline
			}
			switch {
			case tt.write && !got.Equal(deadline):
				t.Errorf("the store's deadline is %v, want the client's %v", got, deadline)
			case !tt.write && !got.IsZero():
				t.Errorf("a read got the deadline %v, want none", got)
			}
		})
	}
}

// An Apollo-Deadline is a time in the clients' clock, which Apollo takes
// to be the cluster's (the one it keeps); on a host whose own clock is
// off, the deadline is moved onto the host's clock, which contexts run
// on. Here the host is 8 s ahead of the cluster: a deadline 1 s away in
// the cluster's time reads 7 s past in the host's, and was refused as
// past before the move.
func TestAClientsDeadlineIsTakenInTheClustersTime(t *testing.T) {
	const ahead = 8 * time.Second
	store := newFake(seedDrivers()...)
	h := buildHarness(t, store, nil, func(d *httpapi.Deps) {
		d.ClockAhead = func() time.Duration { return -ahead } // the cluster's time minus the host's
	}, true)
	header := http.Header{}
	sent := time.Now()
	header.Set(httpapi.DeadlineHeader, strconv.FormatInt(sent.Add(-ahead+time.Second).UnixMilli(), 10))
	rec := h.do(request{method: "PUT", target: "/v1/drivers/drv-1/location", body: `{"lat":1.3,"lng":103.8}`, header: header})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
	}
	if got := store.deadline.Sub(sent); got <= 0 || got > time.Second {
		t.Errorf("the store's deadline is %v after the request was sent, want within (0, 1s]: the client's, on the host's clock", got)
	}
}
