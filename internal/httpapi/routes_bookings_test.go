package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

const validBooking = `{"rider_id":"r1","service":"car","pickup":{"lat":1.3,"lng":103.8},"dropoff":{"lat":1.31,"lng":103.85}}`

// bookingFailures are the pipeline errors every booking route maps the same way.
func bookingFailures(req request) []routeCase {
	return []routeCase{
		{name: "storage unavailable", req: req, bookings: func(f *fakeBookings) { f.err = fmt.Errorf("read: %w", redisstore.ErrUnavailable) },
			wantStatus: 503, wantCode: httpapi.CodeUnavailable, wantMsg: "storage is unavailable", checkBookings: wantRetryAfter("1")},
		{name: "storage deadline", req: req, bookings: func(f *fakeBookings) { f.err = context.DeadlineExceeded },
			wantStatus: 503, wantCode: httpapi.CodeUnavailable},
		{name: "unknown error", req: req, bookings: func(f *fakeBookings) { f.err = errors.New("dial tcp 10.0.0.7:6379: refused") },
			wantStatus: 500, wantCode: httpapi.CodeInternal, wantMsg: "internal error",
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeBookings) {
				if strings.Contains(rec.Body.String(), "10.0.0.7") {
					t.Errorf("internal detail leaked: %s", rec.Body)
				}
			}},
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func wantRetryAfter(want string) func(*testing.T, *httptest.ResponseRecorder, *fakeBookings) {
	return func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeBookings) {
		if got := rec.Header().Get("Retry-After"); got != want {
			t.Errorf("Retry-After = %q, want %q", got, want)
		}
	}
}

// noBookingCalls checks that bad input never reached the pipeline.
func noBookingCalls(t *testing.T, _ *httptest.ResponseRecorder, f *fakeBookings) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 0 {
		t.Errorf("the pipeline was called: %v", f.calls)
	}
}

func wantBooking(id string, status booking.Status, version int64) func(*testing.T, *httptest.ResponseRecorder, *fakeBookings) {
	return func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeBookings) {
		t.Helper()
		got := decodeMap(t, rec)
		if got["id"] != id || got["status"] != string(status) || got["version"] != float64(version) {
			t.Errorf("booking = %v, want id %s status %s version %d", got, id, status, version)
		}
	}
}

// wantAllocatedAt checks the booking's allocated_at; "" means absent.
func wantAllocatedAt(want string) func(*testing.T, *httptest.ResponseRecorder, *fakeBookings) {
	return func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeBookings) {
		t.Helper()
		got, ok := decodeMap(t, rec)["allocated_at"]
		switch {
		case want == "" && ok:
			t.Errorf("allocated_at = %v, want it left out", got)
		case want != "" && got != want:
			t.Errorf("allocated_at = %v, want %s", got, want)
		}
	}
}

func TestCreateBooking(t *testing.T) {
	post := func(body string, key ...string) request {
		req := request{method: "POST", target: "/v1/bookings", body: body}
		if key != nil {
			req.header = http.Header{httpapi.IdempotencyKeyHeader: key}
		}
		return req
	}
	with := func(field, value string) string { // validBooking with one field replaced, or removed when value is ""
		var m map[string]json.RawMessage
		if err := jsonUnmarshal(validBooking, &m); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(m, field)
		} else {
			m[field] = json.RawMessage(value)
		}
		return jsonOf(t, m)
	}
	keyed := booking.ID("r1", "key-1")
	badKey := func(name string, key []string) routeCase {
		return routeCase{name: name, req: request{method: "POST", target: "/v1/bookings", body: validBooking, header: http.Header{httpapi.IdempotencyKeyHeader: key}},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "Idempotency-Key must be", checkBookings: noBookingCalls}
	}
	bad := func(name, body, msg string) routeCase {
		return routeCase{name: name, req: post(body), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: msg, checkBookings: noBookingCalls}
	}
	cases := []routeCase{
		{name: "created", req: post(validBooking, "key-1"), wantStatus: 201,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				want := `{"id":"` + keyed + `","rider_id":"r1","service":"car","pickup":{"lat":1.3,"lng":103.8},"dropoff":{"lat":1.31,"lng":103.85},` +
					`"status":"searching","created_at":"2024-03-01T12:00:00Z","deadline":"2024-03-01T12:00:30Z","updated_at":"2024-03-01T12:00:00Z","version":1}` + "\n"
				if got := rec.Body.String(); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
				if got := rec.Header().Get("Location"); got != "/v1/bookings/"+keyed {
					t.Errorf("Location = %q", got)
				}
				wantReq := booking.Request{RiderID: "r1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8},
					Dropoff: driver.Location{Lat: 1.31, Lng: 103.85}, IdempotencyKey: "key-1"}
				if f.gotReq != wantReq {
					t.Errorf("pipeline got %+v, want %+v", f.gotReq, wantReq)
				}
			}},
		{name: "a retry finds the first booking, still 201", req: post(validBooking, "key-1"), wantStatus: 201,
			bookings: func(f *fakeBookings) { // the first attempt's booking, allocated since
				f.mu.Lock()
				b := f.bookings["bk-alloc"]
				b.ID = keyed
				f.bookings[keyed] = b
				f.mu.Unlock()
			},
			checkBookings: wantBooking(keyed, booking.Allocated, 2)},
		{name: "without a key", req: post(validBooking), wantStatus: 201,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				if f.gotReq.IdempotencyKey != "" {
					t.Errorf("key = %q", f.gotReq.IdempotencyKey)
				}
			}},
		{name: "longest key, every printable character", req: post(validBooking, strings.Repeat(" !~aZ09", 18)+"xx"), wantStatus: 201},
		{name: "zero is a place", req: post(with("dropoff", `{"lat":0,"lng":0}`)), wantStatus: 201},
		{name: "Content-Type with parameters", req: request{method: "POST", target: "/v1/bookings", body: validBooking, contentType: "application/json; charset=utf-8"},
			wantStatus: 201},

		badKey("empty key", []string{""}),
		badKey("key too long", []string{strings.Repeat("k", 129)}),
		badKey("key with a tab", []string{"a\tb"}),
		badKey("key with a newline", []string{"a\nb"}),
		badKey("key with DEL", []string{"a\x7f"}),
		badKey("non-ASCII key", []string{"clé"}),
		{name: "key given twice", req: request{method: "POST", target: "/v1/bookings", body: validBooking, header: http.Header{httpapi.IdempotencyKeyHeader: {"a", "b"}}},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "Idempotency-Key must be given once", checkBookings: noBookingCalls},

		bad("rider missing", with("rider_id", ""), "rider_id is required"),
		bad("rider null", with("rider_id", "null"), "rider_id is required"),
		bad("rider empty", with("rider_id", `""`), "rider_id must be 1 to 64"),
		bad("rider malformed", with("rider_id", `"r 1"`), "rider_id must be 1 to 64"),
		bad("rider too long", with("rider_id", `"`+strings.Repeat("r", 65)+`"`), "rider_id must be 1 to 64"),
		bad("rider a number", with("rider_id", `1`), "rider_id has a JSON number where a string is expected"),
		bad("service missing", with("service", ""), "service is required"),
		bad("service malformed", with("service", `"Car"`), "service must be 1 to 32"),
		bad("pickup missing", with("pickup", ""), "pickup is required"),
		bad("pickup null", with("pickup", "null"), "pickup is required"),
		bad("pickup not an object", with("pickup", "[1.3,103.8]"), "pickup has a JSON array where an object is expected"),
		bad("pickup lat missing", with("pickup", `{"lng":103.8}`), "pickup.lat is required"),
		bad("pickup lat out of range", with("pickup", `{"lat":91,"lng":103.8}`), "pickup.lat must be within [-90, 90]"),
		bad("pickup lat a string", with("pickup", `{"lat":"1.3","lng":103.8}`), "pickup.lat has a JSON string where a finite number is expected"),
		bad("pickup with an unknown field", with("pickup", `{"lat":1.3,"lng":103.8,"alt":10}`), `unknown field "alt"`),
		bad("dropoff missing", with("dropoff", ""), "dropoff is required"),
		bad("dropoff lng out of range", with("dropoff", `{"lat":1.3,"lng":-180.01}`), "dropoff.lng must be within [-180, 180]"),
		bad("dropoff lng overflows", with("dropoff", `{"lat":1.3,"lng":-1e400}`), "dropoff.lng has a JSON number where a finite number is expected"),
		bad("null body", `null`, "rider_id is required"),
		bad("empty object", `{}`, "rider_id is required"),

		{name: "high demand", req: post(validBooking, "key-1"),
			bookings: func(f *fakeBookings) {
				f.err = &booking.HighDemandError{RetryAfter: 2500 * time.Millisecond, Cell: "car:w21z7"}
			},
			wantStatus: 429, wantCode: httpapi.CodeHighDemand, wantMsg: "high demand near the pickup",
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantRetryAfter("3")(t, rec, f)
				if e := decodeMap(t, rec)["error"].(map[string]any); e["retry_after_s"] != float64(3) {
					t.Errorf("error = %v, want retry_after_s 3", e)
				}
				if strings.Contains(rec.Body.String(), "w21z7") {
					t.Errorf("the cell leaked: %s", rec.Body)
				}
			}},
		{name: "unconfirmed write", req: post(validBooking, "key-1"),
			bookings: func(f *fakeBookings) {
				f.err = fmt.Errorf("create booking: %w: %w", redisstore.ErrUnavailable,
					fmt.Errorf("%w: 0 of 1 replicas acknowledged within 50ms", redisroute.ErrUnconfirmed))
			},
			wantStatus: 503, wantCode: httpapi.CodeUnavailable, wantMsg: "retry with the same Idempotency-Key",
			checkBookings: wantRetryAfter("1")},
		{name: "pipeline says invalid", req: post(validBooking),
			bookings: func(f *fakeBookings) {
				f.err = fmt.Errorf("%w: Idempotency-Key must be at most 128 characters", driver.ErrInvalidArgument)
			},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "invalid argument"},

		{name: "wrong method", req: request{method: "GET", target: "/v1/bookings"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("POST")},
	}
	cases = append(cases, badBodies("POST", "/v1/bookings", validBooking)...)
	cases = append(cases, bookingFailures(post(validBooking))...)
	runRouteCases(t, "POST /v1/bookings", cases)
}

func TestGetBooking(t *testing.T) {
	get := func(target string) request { return request{method: "GET", target: target} }
	bad := func(name, query, msg string) routeCase {
		return routeCase{name: name, req: get("/v1/bookings/bk-search?" + query),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: msg, checkBookings: noBookingCalls}
	}
	wantSeen := func(seen ...int64) func(*testing.T, *httptest.ResponseRecorder, *fakeBookings) {
		return func(t *testing.T, _ *httptest.ResponseRecorder, f *fakeBookings) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !slices.Equal(f.gotSeen, seen) {
				t.Errorf("Wait saw %v, want %v", f.gotSeen, seen)
			}
		}
	}
	cases := []routeCase{
		{name: "found", req: get("/v1/bookings/bk-alloc"), wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeBookings) {
				want := `{"id":"bk-alloc","rider_id":"r1","service":"car","pickup":{"lat":1.3,"lng":103.8},"dropoff":{"lat":1.31,"lng":103.85},` +
					`"status":"allocated","driver_id":"drv-res","reserved_until":"2024-03-01T12:01:00Z","allocated_at":"2024-03-01T11:59:02Z",` +
					`"created_at":"2024-03-01T11:59:00Z","deadline":"2024-03-01T11:59:30Z","updated_at":"2024-03-01T11:59:02Z","version":2}` + "\n"
				if got := rec.Body.String(); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
			}},
		{name: "accepted keeps allocated_at", req: get("/v1/bookings/bk-done"), wantStatus: 200,
			checkBookings: wantAllocatedAt("2024-03-01T11:59:02Z")},
		{name: "never allocated: no allocated_at", req: get("/v1/bookings/bk-search"), wantStatus: 200,
			checkBookings: wantAllocatedAt("")},
		{name: "HEAD", req: request{method: "HEAD", target: "/v1/bookings/bk-alloc"}, wantStatus: 200},
		{name: "not found", req: get("/v1/bookings/bk-nobody"),
			wantStatus: 404, wantCode: httpapi.CodeNotFound, wantMsg: "booking not found"},
		{name: "bad id", req: get("/v1/bookings/bk%20x"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be 1 to 64", checkBookings: noBookingCalls},
		{name: "id too long", req: get("/v1/bookings/" + strings.Repeat("b", 65)),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be 1 to 64", checkBookings: noBookingCalls},

		{name: "a version already passed answers at once", req: get("/v1/bookings/bk-alloc?wait=30s&version=1"), wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantBooking("bk-alloc", booking.Allocated, 2)(t, rec, f)
				wantSeen(1)(t, rec, f)
				if n := f.callsTo("Get"); n != 0 {
					t.Errorf("Get called %d times; with a version there is nothing to read first", n)
				}
			}},
		{name: "version zero", req: get("/v1/bookings/bk-alloc?wait=1s&version=0"), wantStatus: 200, checkBookings: wantSeen(0)},
		{name: "the wait runs out: the booking as it is", req: get("/v1/bookings/bk-search?wait=1ms"), wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantBooking("bk-search", booking.Searching, 1)(t, rec, f)
				wantSeen(1)(t, rec, f) // the current version by default
			}},
		{name: "the wait runs out, reported as an error", req: get("/v1/bookings/bk-search?wait=1ms"),
			bookings: func(f *fakeBookings) { f.waitAsErr = true }, wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantBooking("bk-search", booking.Searching, 1)(t, rec, f)
				if n := f.callsTo("Get"); n != 2 {
					t.Errorf("Get called %d times, want 2: before waiting and after the wait ran out", n)
				}
			}},
		{name: "a final booking does not wait", req: get("/v1/bookings/bk-gone?wait=30s"), wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantBooking("bk-gone", booking.Cancelled, 2)(t, rec, f)
				wantSeen()(t, rec, f)
			}},
		{name: "an accepted booking is waited on: its driver may back out", req: get("/v1/bookings/bk-done?wait=1ms"), wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantBooking("bk-done", booking.Accepted, 3)(t, rec, f)
				wantSeen(3)(t, rec, f)
			}},
		{name: "wait for a missing booking", req: get("/v1/bookings/bk-nobody?wait=5s"),
			wantStatus: 404, wantCode: httpapi.CodeNotFound},
		{name: "wait with a version for a missing booking", req: get("/v1/bookings/bk-nobody?wait=5s&version=3"),
			wantStatus: 404, wantCode: httpapi.CodeNotFound},
		{name: "longest wait", req: get("/v1/bookings/bk-alloc?wait=30s&version=1"), wantStatus: 200},
		{name: "configured longest wait", req: get("/v1/bookings/bk-alloc?wait=6s&version=1"), edit: func(c *httpapi.Config) { c.MaxWait = 5 * time.Second },
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "wait must be a duration within (0s, 5s]"},

		bad("wait zero", "wait=0s", "wait must be a duration within (0s, 30s]"),
		bad("wait bare zero", "wait=0", "wait must be a duration"),
		bad("wait negative", "wait=-1s", "wait must be a duration"),
		bad("wait too long", "wait=30.001s", "wait must be a duration within (0s, 30s]"),
		bad("wait without a unit", "wait=5", "wait must be a duration"),
		bad("wait not a duration", "wait=soon", "wait must be a duration"),
		bad("wait empty", "wait=", "wait must be a duration"),
		bad("wait overflows", "wait=99999999999999999999h", "wait must be a duration"),
		bad("wait given twice", "wait=1s&wait=2s", "wait must be given once"),
		bad("version without wait", "version=3", "version is only allowed with wait"),
		bad("version negative", "wait=1s&version=-1", "version must be an integer of at least 0"),
		bad("version fractional", "wait=1s&version=1.5", "version must be an integer"),
		bad("version not a number", "wait=1s&version=v2", "version must be an integer"),
		bad("version overflows", "wait=1s&version=99999999999999999999", "version must be an integer"),
		bad("version empty", "wait=1s&version=", "version must be an integer"),
		bad("unknown parameter", "timeout=5s", `unknown parameter "timeout"`),
		bad("bad escape", "wait=%zz", "query is not a valid query string"),

		{name: "wrong method", req: request{method: "DELETE", target: "/v1/bookings/bk-1"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("GET, HEAD")},
	}
	cases = append(cases, bookingFailures(get("/v1/bookings/bk-search"))...)
	cases = append(cases, bookingFailures(get("/v1/bookings/bk-search?wait=1s&version=1"))...)
	runRouteCases(t, "GET /v1/bookings/{id}", cases)
}

// TestBookingLongPollReturnsEarly: a long poll answers as soon as the
// booking changes, not when the wait is over.
func TestBookingLongPollReturnsEarly(t *testing.T) {
	for _, query := range []string{"wait=30s", "wait=30s&version=1"} {
		t.Run(query, func(t *testing.T) {
			h := newHarness(t, newFake(seedDrivers()...), nil)
			h.bookings.waiting = make(chan struct{}, 1)
			done := make(chan *httptest.ResponseRecorder)
			go func() { done <- h.do(request{method: "GET", target: "/v1/bookings/bk-search?" + query}) }()

			<-h.bookings.waiting // the handler is waiting on version 1
			h.bookings.update("bk-search", func(b *booking.Booking) {
				b.Status, b.DriverID, b.ReservedUntil = booking.Allocated, "drv-res", testNow.Add(time.Minute)
			})
			rec := <-done

			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			wantBooking("bk-search", booking.Allocated, 2)(t, rec, h.bookings)
			if !h.bookings.endedEarly {
				t.Error("the long poll ran its whole wait instead of answering the change")
			}
		})
	}
}

// TestBookingLongPollClientGone: when the client leaves, the wait ends
// with it.
func TestBookingLongPollClientGone(t *testing.T) {
	h := newHarness(t, newFake(), nil)
	h.bookings.waiting = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, "GET", "/v1/bookings/bk-search?wait=30s", nil))
	}()
	<-h.bookings.waiting
	cancel()
	<-done // before the 30 s are over: the test would time out otherwise
	h.bookings.mu.Lock()
	defer h.bookings.mu.Unlock()
	if h.bookings.endedEarly {
		t.Error("Wait returned without its context ending or the booking changing")
	}
}

func TestCancelBooking(t *testing.T) {
	post := func(id, body string) request {
		return request{method: "POST", target: "/v1/bookings/" + id + "/cancel", body: body}
	}
	bad := func(name string, req request, status int, code httpapi.Code, msg string) routeCase {
		return routeCase{name: name, req: req, wantStatus: status, wantCode: code, wantMsg: msg, checkBookings: noBookingCalls}
	}
	cases := []routeCase{
		{name: "searching", req: post("bk-search", ""), wantStatus: 200, checkBookings: wantBooking("bk-search", booking.Cancelled, 2)},
		{name: "allocated frees the driver", req: post("bk-alloc", ""), wantStatus: 200,
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeBookings) {
				wantBooking("bk-alloc", booking.Cancelled, 3)(t, rec, f)
				if got := decodeMap(t, rec); got["driver_id"] != nil || got["reserved_until"] != nil {
					t.Errorf("booking = %v, want no driver", got)
				}
			}},
		{name: "empty object", req: post("bk-search", "{}"), wantStatus: 200},
		{name: "empty object with spaces", req: post("bk-search", " { } \n"), wantStatus: 200},
		{name: "empty body with a Content-Type", req: request{method: "POST", target: "/v1/bookings/bk-search/cancel", contentType: "application/json"},
			wantStatus: 200},
		{name: "empty body with another Content-Type", req: request{method: "POST", target: "/v1/bookings/bk-search/cancel", contentType: "text/plain"},
			wantStatus: 200},
		{name: "empty streamed body", req: request{method: "POST", target: "/v1/bookings/bk-search/cancel", unknownLength: true},
			wantStatus: 200},
		{name: "streamed {}", req: request{method: "POST", target: "/v1/bookings/bk-search/cancel", body: "{}", unknownLength: true},
			wantStatus: 200},

		{name: "accepted", req: post("bk-done", ""),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "the booking's status does not allow this change",
			checkBookings: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeBookings) {
				if strings.Contains(rec.Body.String(), "→") {
					t.Errorf("the store's wording leaked: %s", rec.Body)
				}
			}},
		{name: "already cancelled: sent again, done", req: post("bk-gone", "{}"),
			wantStatus: 200, checkBookings: wantBooking("bk-gone", booking.Cancelled, 2)},
		{name: "not found", req: post("bk-nobody", ""),
			wantStatus: 404, wantCode: httpapi.CodeNotFound, wantMsg: "booking not found"},

		bad("bad id", post("bk{1}", ""), 400, httpapi.CodeInvalidArgument, "id must be 1 to 64"),
		bad("a reason", post("bk-search", `{"reason":"late"}`), 400, httpapi.CodeInvalidArgument, `unknown field "reason"`),
		bad("null", post("bk-search", `null`), 400, httpapi.CodeInvalidArgument, "body must be empty or {}"),
		bad("array", post("bk-search", `[]`), 400, httpapi.CodeInvalidArgument, "body must be an object"),
		bad("not JSON", post("bk-search", `cancel`), 400, httpapi.CodeInvalidArgument, "not valid JSON"),
		bad("truncated", post("bk-search", `{`), 400, httpapi.CodeInvalidArgument, "truncated"),
		bad("two values", post("bk-search", `{}{}`), 400, httpapi.CodeInvalidArgument, "single JSON value"),
		bad("streamed garbage", request{method: "POST", target: "/v1/bookings/bk-search/cancel", body: "x", unknownLength: true},
			400, httpapi.CodeInvalidArgument, "not valid JSON"),
		bad("a body without Content-Type", request{method: "POST", target: "/v1/bookings/bk-search/cancel", body: "{}", contentType: "-"},
			415, httpapi.CodeUnsupportedMediaType, "got none"),
		bad("a body as text", request{method: "POST", target: "/v1/bookings/bk-search/cancel", body: "{}", contentType: "text/plain"},
			415, httpapi.CodeUnsupportedMediaType, ""),
		bad("a body over the limit", post("bk-search", `{"pad":"`+strings.Repeat("x", 1<<20)+`"}`),
			413, httpapi.CodePayloadTooLarge, "must not exceed 1048576 bytes"),
		bad("a streamed body over the limit", request{method: "POST", target: "/v1/bookings/bk-search/cancel",
			body: `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`, unknownLength: true},
			413, httpapi.CodePayloadTooLarge, ""),

		{name: "wrong method", req: request{method: "GET", target: "/v1/bookings/bk-search/cancel"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("POST")},
	}
	cases = append(cases, bookingFailures(post("bk-search", ""))...)
	runRouteCases(t, "POST /v1/bookings/{id}/cancel", cases)
}

// TestBookingsDisabled: without Deps.Bookings the routes still exist, check
// their input, and answer 503.
func TestBookingsDisabled(t *testing.T) {
	doc := loadSpec(t)
	h, err := httpapi.New(httpapi.DefaultConfig(), httpapi.Deps{Drivers: newFake(), Rules: driver.DefaultRules()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pattern    string
		req        request
		wantStatus int
		wantCode   httpapi.Code
	}{
		{"POST /v1/bookings", request{method: "POST", target: "/v1/bookings", body: validBooking}, 503, httpapi.CodeUnavailable},
		{"GET /v1/bookings/{id}", request{method: "GET", target: "/v1/bookings/bk-1"}, 503, httpapi.CodeUnavailable},
		{"GET /v1/bookings/{id}", request{method: "GET", target: "/v1/bookings/bk-1?wait=5s"}, 503, httpapi.CodeUnavailable},
		{"POST /v1/bookings/{id}/cancel", request{method: "POST", target: "/v1/bookings/bk-1/cancel"}, 503, httpapi.CodeUnavailable},
		{"POST /v1/bookings", request{method: "POST", target: "/v1/bookings", body: `{}`}, 400, httpapi.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.req.method+" "+tt.req.target, func(t *testing.T) {
			hn := &harness{handler: h}
			rec := hn.do(tt.req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			e := decodeError(t, rec)
			if e.Error.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Error.Code, tt.wantCode)
			}
			if tt.wantStatus == 503 && (e.Error.Message != "bookings are not enabled" || rec.Header().Get("Retry-After") != "1") {
				t.Errorf("got %+v, Retry-After %q", e.Error, rec.Header().Get("Retry-After"))
			}
			checkSpec(t, doc, tt.pattern, tt.req, rec)
		})
	}
}

// TestBookingErrorMapping specifies the booking rows of the error table:
// the pipeline fails GET /v1/bookings/{id} with each error.
func TestBookingErrorMapping(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantStatus  int
		wantCode    httpapi.Code
		wantMsg     string // the whole message
		wantRetry   string // Retry-After
		wantRetryS  float64
		wantLogged  bool
		wantNoLeaks string
	}{
		{"not found", booking.ErrNotFound, 404, httpapi.CodeNotFound, "booking not found", "", 0, false, ""},
		{"not found, wrapped", fmt.Errorf("booking bk-1 on 10.0.0.7: %w", booking.ErrNotFound), 404, httpapi.CodeNotFound, "booking not found", "", 0, false, "10.0.0.7"},
		{"illegal", fmt.Errorf("%w: accepted → cancelled", booking.ErrIllegal), 409, httpapi.CodeIllegalTransition,
			"the booking's status does not allow this change", "", 0, false, "→"},
		{"changing under a driver's answer", fmt.Errorf("%w: booking bk-1 does not name driver d-1 yet", booking.ErrChanging), 503, httpapi.CodeUnavailable,
			"the booking was changing while this request ran (its allocation still being recorded, or other updates), and the request may or may not have changed the driver: read the booking and the driver back, or send the request again", "1", 0, false, "bk-1"},
		{"high demand", &booking.HighDemandError{RetryAfter: 10 * time.Second, Cell: "car:w21z7"}, 429, httpapi.CodeHighDemand,
			"high demand near the pickup: no drivers can be found right now; retry in 10s", "10", 10, false, "w21z7"},
		{"high demand, wrapped, a fraction of a second", fmt.Errorf("admit: %w", &booking.HighDemandError{RetryAfter: 100 * time.Millisecond}),
			429, httpapi.CodeHighDemand, "high demand near the pickup: no drivers can be found right now; retry in 100ms", "1", 1, false, ""},
		{"high demand, no wait given", &booking.HighDemandError{}, 429, httpapi.CodeHighDemand,
			"high demand near the pickup: no drivers can be found right now; retry in 0s", "1", 1, false, ""},
		{"high demand, negative wait", &booking.HighDemandError{RetryAfter: -time.Hour}, 429, httpapi.CodeHighDemand, "", "1", 1, false, ""},
		{"high demand, absurd wait", &booking.HighDemandError{RetryAfter: 1e6 * time.Hour}, 429, httpapi.CodeHighDemand, "", "86400", 86400, false, ""},
		{"unconfirmed", fmt.Errorf("%w: %w", redisstore.ErrUnavailable, redisroute.ErrUnconfirmed), 503, httpapi.CodeUnavailable,
			"the change reached the primary but no replica confirmed it in time, so a failover could still undo it: read it back to see whether it lasted; to create a booking, retry with the same Idempotency-Key", "1", 0, false, ""},
		{"unconfirmed, bare", redisroute.ErrUnconfirmed, 503, httpapi.CodeUnavailable,
			"the change reached the primary but no replica confirmed it in time, so a failover could still undo it: read it back to see whether it lasted; to create a booking, retry with the same Idempotency-Key", "1", 0, false, ""},
		{"unavailable", fmt.Errorf("%w: node 10.0.0.7 down", redisstore.ErrUnavailable), 503, httpapi.CodeUnavailable,
			"storage is unavailable; try again", "1", 0, false, "10.0.0.7"},
		{"unknown", errors.New("dial tcp 10.0.0.7:6379"), 500, httpapi.CodeInternal, "internal error", "", 0, true, "10.0.0.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), nil)
			h.bookings.err = tt.err
			rec := h.do(request{method: "GET", target: "/v1/bookings/bk-1"})

			var e struct {
				Error struct {
					Code        httpapi.Code `json:"code"`
					Message     string       `json:"message"`
					RetryAfterS float64      `json:"retry_after_s"`
				} `json:"error"`
			}
			if err := jsonUnmarshal(rec.Body.String(), &e); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.wantStatus || e.Error.Code != tt.wantCode || (tt.wantMsg != "" && e.Error.Message != tt.wantMsg) {
				t.Errorf("got %d %+v\nwant %d %s %q", rec.Code, e.Error, tt.wantStatus, tt.wantCode, tt.wantMsg)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetry)
			}
			if e.Error.RetryAfterS != tt.wantRetryS {
				t.Errorf("retry_after_s = %v, want %v", e.Error.RetryAfterS, tt.wantRetryS)
			}
			if tt.wantNoLeaks != "" && strings.Contains(rec.Body.String(), tt.wantNoLeaks) {
				t.Errorf("%q leaked: %s", tt.wantNoLeaks, rec.Body)
			}
			if logged := strings.Contains(h.logs.String(), `"msg":"unexpected error"`); logged != tt.wantLogged {
				t.Errorf("logged as unexpected = %v, want %v", logged, tt.wantLogged)
			}
			checkSpec(t, loadSpec(t), "GET /v1/bookings/{id}", request{method: "GET"}, rec)
		})
	}
}
