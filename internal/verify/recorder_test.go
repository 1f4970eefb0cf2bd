package verify

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestAnAnswerProvesWhatItSays(t *testing.T) {
	refused := dialRefused(t)
	for _, tc := range []struct {
		name       string
		kind       Kind
		status     int
		notApplied bool
		err        error
		want       Outcome
	}{
		{"a write answered", Heartbeat, 200, false, nil, OK},
		{"a write refused by the API", Heartbeat, 409, false, nil, Failed},
		{"a write's 503: may have happened", Heartbeat, 503, false, nil, Unknown},
		{"a write's 503 saying nothing was done", Heartbeat, 503, true, nil, Failed},
		{"a write's 500 saying nothing was done", CreateBooking, 500, true, nil, Failed},
		{"a write without an answer", DriverEvent, 0, false, errors.New("timeout"), Unknown},
		{"a write to an instance not listening: never sent", DriverEvent, 0, false, refused, Failed},
		{"a read that failed", ReadDriver, 503, false, nil, Failed},
		{"a read of nothing", ReadDriver, 404, false, nil, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcomeOf(tc.kind, tc.status, tc.notApplied, tc.err); got != tc.want {
				t.Errorf("outcomeOf(%s, %d, not applied %v, %v) = %s, want %s", tc.kind, tc.status, tc.notApplied, tc.err, got, tc.want)
			}
		})
	}
}

// dialRefused is the error of a request to a port nobody listens on, as
// net/http reports it.
func dialRefused(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	resp, err := http.Post("http://"+addr+"/v1/bookings", "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a request to %s, closed, was answered", addr)
	}
	if !neverSent(err) {
		t.Fatalf("a refused connection: %v, not seen as never sent", err)
	}
	return err
}
