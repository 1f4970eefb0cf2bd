package verify

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// With a balancer modelled, a request whose connection an instance refused
// goes to the next, and is recorded once, as the next one answered it,
// from its first invocation; a request that was answered, even badly, is
// not sent again. Without one, the refusal is the request's outcome.
func TestARefusedConnectionGoesToTheNextInstanceBehindABalancer(t *testing.T) {
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(body)+" "+r.Header.Get("Idempotency-Key"))
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"status":"searching","version":1}`)
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	next := map[string]string{down: up.URL, up.URL: down}

	for _, balanced := range []bool{true, false} {
		got = nil
		r := newRecorder(time.Now(), time.Second, true)
		if balanced {
			r.next, r.tries = func(api string) string { return next[api] }, 2
		}
		op := r.do(context.Background(), Op{Kind: CreateBooking, Instance: down}, http.MethodPost, "/v1/bookings", map[string]string{"rider_id": "r1"}, map[string]string{"Idempotency-Key": "k1"})
		switch {
		case balanced && (op.Outcome != OK || op.Status != http.StatusCreated || op.Instance != up.URL || len(got) != 1 || got[0] != `POST /v1/bookings {"rider_id":"r1"} k1`):
			t.Errorf("balanced: %+v, the next instance got %q; want it answered there, once, with the body and key", op, got)
		case !balanced && (op.Outcome != Failed || op.Instance != down || len(got) != 0):
			t.Errorf("not balanced: %+v, the other instance got %q; want a refusal, never sent", op, got)
		}
		if n := len(r.history()); n != 1 {
			t.Errorf("balanced %v: %d operations recorded, want 1", balanced, n)
		}
	}
}

// net/http sends a request with an Idempotency-Key and no body again on a
// new connection when the reused one breaks after it was written, and
// returns only the new dial's error: such a request was sent, may have
// been done, and goes to no other instance.
func TestARequestWrittenThenReplayedIntoARefusalIsUnknown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		rd := bufio.NewReader(conn)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(rd)
			if err != nil {
				return
			}
			got <- req.Method + " " + req.URL.Path
			if i == 1 {
				ln.Close() // the replay's dial is refused
				return     // and the request that came is never answered
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
		}
	}()
	defer ln.Close()
	api := "http://" + ln.Addr().String()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- "other " + r.Method + " " + r.URL.Path
	}))
	defer other.Close()
	r := newRecorder(time.Now(), 2*time.Second, true)
	r.next, r.tries = func(string) string { return other.URL }, 2
	r.do(context.Background(), Op{Kind: ReadDriver, Instance: api}, http.MethodGet, "/v1/drivers/d1", nil, nil)
	op := r.do(context.Background(), Op{Kind: CreateBooking, Instance: api}, http.MethodPost, "/v1/bookings", nil, map[string]string{"Idempotency-Key": "k1"})
	<-served
	other.Close()
	close(got)
	var seen []string
	for s := range got {
		seen = append(seen, s)
	}
	if op.Outcome != Unknown || op.Instance != api || len(seen) != 2 {
		t.Errorf("%+v, requests seen %q; want unknown, at its own instance, the other never asked", op, seen)
	}
}
