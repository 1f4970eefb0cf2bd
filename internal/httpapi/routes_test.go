package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// routeCase is one request to one route and what must come back.
type routeCase struct {
	name     string
	req      request
	setup    func(*fakeDrivers)  // failures injected into the store; nil for a healthy store
	bookings func(*fakeBookings) // the same for the booking pipeline
	edit     func(*httpapi.Config)

	wantStatus int
	wantCode   httpapi.Code // "" for success
	wantMsg    string       // substring of the error message
	check      func(t *testing.T, rec *httptest.ResponseRecorder, store *fakeDrivers)
	// checkBookings is check for the booking routes.
	checkBookings func(t *testing.T, rec *httptest.ResponseRecorder, bookings *fakeBookings)
}

// runRouteCases runs cases against pattern and checks, for every case: the
// status, the error code and message, that the exchange matches the spec,
// and that healthy stores never yield a 5xx, however bad the input.
func runRouteCases(t *testing.T, pattern string, cases []routeCase) {
	t.Helper()
	doc := loadSpec(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newFake(seedDrivers()...)
			if tc.setup != nil {
				tc.setup(store)
			}
			h := newHarness(t, store, tc.edit)
			if tc.bookings != nil {
				tc.bookings(h.bookings)
			}
			rec := h.do(tc.req)

			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.setup == nil && tc.bookings == nil && rec.Code >= 500 {
				t.Fatalf("healthy store, status %d: bad input must never be a 5xx", rec.Code)
			}
			if tc.wantCode != "" {
				e := decodeError(t, rec)
				if e.Error.Code != tc.wantCode {
					t.Errorf("code = %q, want %q (message %q)", e.Error.Code, tc.wantCode, e.Error.Message)
				}
				if !strings.Contains(e.Error.Message, tc.wantMsg) {
					t.Errorf("message = %q, want it to contain %q", e.Error.Message, tc.wantMsg)
				}
			}
			if rec.Header().Get(httpapi.RequestIDHeader) == "" {
				t.Error("no request id in the response")
			}
			if tc.req.method != http.MethodHead {
				checkSpec(t, doc, pattern, tc.req, rec)
			}
			if tc.check != nil {
				tc.check(t, rec, store)
			}
			if tc.checkBookings != nil {
				tc.checkBookings(t, rec, h.bookings)
			}
		})
	}
}

// badBodies are malformed bodies every JSON route must refuse the same way.
func badBodies(method, target, valid string) []routeCase {
	huge := `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	return []routeCase{
		{name: "empty body", req: request{method: method, target: target, contentType: "application/json"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "body must not be empty"},
		{name: "not JSON", req: request{method: method, target: target, body: `{lat: 1}`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "not valid JSON"},
		{name: "truncated JSON", req: request{method: method, target: target, body: `{"lat":`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "truncated"},
		{name: "array instead of object", req: request{method: method, target: target, body: `[]`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "body must be an object"},
		{name: "string instead of object", req: request{method: method, target: target, body: `"hi"`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "body must be an object"},
		{name: "unknown field", req: request{method: method, target: target, body: strings.Replace(valid, "{", `{"extra":1,`, 1)},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: `unknown field "extra"`},
		{name: "second value after the first", req: request{method: method, target: target, body: valid + ` {}`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "single JSON value"},
		{name: "garbage after the value", req: request{method: method, target: target, body: valid + `x`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "single JSON value"},
		{name: "declared length over the limit", req: request{method: method, target: target, body: huge},
			wantStatus: 413, wantCode: httpapi.CodePayloadTooLarge, wantMsg: "must not exceed 1048576 bytes"},
		{name: "streamed body over the limit", req: request{method: method, target: target, body: huge, unknownLength: true},
			wantStatus: 413, wantCode: httpapi.CodePayloadTooLarge},
		{name: "valid body over a small limit", req: request{method: method, target: target, body: valid},
			edit:       func(c *httpapi.Config) { c.MaxBodyBytes = 4 },
			wantStatus: 413, wantCode: httpapi.CodePayloadTooLarge, wantMsg: "4 bytes"},
		{name: "no Content-Type", req: request{method: method, target: target, body: valid, contentType: "-"},
			wantStatus: 415, wantCode: httpapi.CodeUnsupportedMediaType, wantMsg: "got none"},
		{name: "text/plain", req: request{method: method, target: target, body: valid, contentType: "text/plain"},
			wantStatus: 415, wantCode: httpapi.CodeUnsupportedMediaType},
		{name: "malformed Content-Type", req: request{method: method, target: target, body: valid, contentType: "application/json;;"},
			wantStatus: 415, wantCode: httpapi.CodeUnsupportedMediaType},
		{name: "application/jsonp", req: request{method: method, target: target, body: valid, contentType: "application/jsonp"},
			wantStatus: 415, wantCode: httpapi.CodeUnsupportedMediaType},
	}
}

// storeFailures are the store errors every route maps the same way.
func storeFailures(req request) []routeCase {
	return []routeCase{
		{name: "store unavailable", req: req, setup: func(f *fakeDrivers) { f.err = fmt.Errorf("read: %w", redisstore.ErrUnavailable) },
			wantStatus: 503, wantCode: httpapi.CodeUnavailable,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				if got := rec.Header().Get("Retry-After"); got != "1" {
					t.Errorf("Retry-After = %q, want 1", got)
				}
			}},
		{name: "store deadline", req: req, setup: func(f *fakeDrivers) { f.err = context.DeadlineExceeded },
			wantStatus: 503, wantCode: httpapi.CodeUnavailable},
		{name: "store unknown error", req: req, setup: func(f *fakeDrivers) { f.err = errors.New("dial tcp 10.0.0.7:6379: refused") },
			wantStatus: 500, wantCode: httpapi.CodeInternal, wantMsg: "internal error",
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				if strings.Contains(rec.Body.String(), "10.0.0.7") {
					t.Errorf("internal detail leaked: %s", rec.Body)
				}
			}},
	}
}

func TestPutLocation(t *testing.T) {
	const target = "/v1/drivers/drv-1/location"
	put := func(body string) request { return request{method: "PUT", target: target, body: body} }
	cases := []routeCase{
		{name: "heartbeat", req: put(`{"lat":1.35,"lng":103.82}`), wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				got := decodeMap(t, rec)
				if jsonOf(t, got["location"]) != `{"lat":1.35,"lng":103.82}` || got["last_heartbeat"] != "2024-03-01T12:00:00Z" || got["available"] != true {
					t.Errorf("driver = %v", got)
				}
			}},
		{name: "first heartbeat of a new driver", req: request{method: "PUT", target: "/v1/drivers/drv-new/location", body: `{"lat":-33.9,"lng":151.2}`},
			wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				if got := decodeMap(t, rec); got["status"] != "offline" || got["available"] != false {
					t.Errorf("driver = %v", got)
				}
			}},
		{name: "zero is a position", req: put(`{"lat":0,"lng":0}`), wantStatus: 200},
		{name: "edges of the world", req: put(`{"lat":-90,"lng":180}`), wantStatus: 200},
		{name: "Content-Type with parameters", req: request{method: "PUT", target: target, body: `{"lat":1,"lng":2}`, contentType: "Application/JSON; charset=utf-8"},
			wantStatus: 200},
		{name: "id too long", req: request{method: "PUT", target: "/v1/drivers/" + strings.Repeat("x", 65) + "/location", body: `{"lat":1,"lng":2}`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be 1 to 64 characters"},
		{name: "id with a brace", req: request{method: "PUT", target: "/v1/drivers/a%7Bb/location", body: `{"lat":1,"lng":2}`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be"},
		{name: "id with an escaped slash", req: request{method: "PUT", target: "/v1/drivers/a%2Fb/location", body: `{"lat":1,"lng":2}`},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be"},
		{name: "lat above 90", req: put(`{"lat":91,"lng":2}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat must be within [-90, 90]"},
		{name: "lng below -180", req: put(`{"lat":1,"lng":-180.5}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lng must be within [-180, 180]"},
		{name: "lat missing", req: put(`{"lng":2}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat is required"},
		{name: "lng null", req: put(`{"lat":1,"lng":null}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lng is required"},
		{name: "null body", req: put(`null`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat is required"},
		{name: "lat as a string", req: put(`{"lat":"1.3","lng":2}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat has a JSON string where a finite number is expected"},
		{name: "lat overflows float64", req: put(`{"lat":1e400,"lng":2}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat has a JSON number where a finite number is expected"},
		{name: "wrong method", req: request{method: "DELETE", target: target},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed,
			check: wantAllow("PUT")},
	}
	cases = append(cases, badBodies("PUT", target, `{"lat":1,"lng":2}`)...)
	cases = append(cases, storeFailures(put(`{"lat":1,"lng":2}`))...)
	runRouteCases(t, "PUT /v1/drivers/{id}/location", cases)
}

func TestPostEvent(t *testing.T) {
	post := func(id, body string) request {
		return request{method: "POST", target: "/v1/drivers/" + id + "/events", body: body}
	}
	wantDriver := func(status string, accepted bool) func(*testing.T, *httptest.ResponseRecorder, *fakeDrivers) {
		return func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
			if got := decodeMap(t, rec); got["status"] != status || got["accepted"] != accepted {
				t.Errorf("driver = %v, want status %s accepted %v", got, status, accepted)
			}
		}
	}
	cases := []routeCase{
		{name: "go_online", req: post("drv-off", `{"type":"go_online","services":["car","bike"]}`),
			wantStatus: 200, check: wantDriver("available", false)},
		{name: "go_offline", req: post("drv-1", `{"type":"go_offline"}`),
			wantStatus: 200, check: wantDriver("offline", false)},
		{name: "accept the held booking", req: post("drv-res", `{"type":"accept"}`),
			wantStatus: 200, check: wantDriver("reserved", true)},
		{name: "accept naming the booking", req: post("drv-res", `{"type":"accept","booking_id":"bk-1"}`),
			wantStatus: 200, check: wantDriver("reserved", true)},
		{name: "decline", req: post("drv-res", `{"type":"decline"}`),
			wantStatus: 200, check: wantDriver("available", false)},
		{name: "accept naming its reservation", req: post("drv-res", `{"type":"accept","reserved_until":"2024-03-01T12:05:00Z"}`),
			wantStatus: 200, check: wantDriver("reserved", true)},
		{name: "decline naming its reservation", req: post("drv-res", `{"type":"decline","booking_id":"bk-1","reserved_until":"2024-03-01T20:05:00+08:00"}`),
			wantStatus: 200, check: wantDriver("available", false)},
		{name: "decline naming an earlier reservation of the booking", req: post("drv-res", `{"type":"decline","reserved_until":"2024-03-01T12:04:00Z"}`),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "no longer holds the reservation answered",
			check: wantErrorStatus("reserved")},
		{name: "accept naming an earlier reservation of the booking", req: post("drv-res", `{"type":"accept","reserved_until":"2024-03-01T12:04:59.999Z"}`),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "no longer holds the reservation answered",
			check: wantErrorStatus("reserved")},

		{name: "illegal transition", req: post("drv-1", `{"type":"accept"}`),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "cannot accept from available",
			check: wantErrorStatus("available")},
		{name: "start an unaccepted trip", req: post("drv-res", `{"type":"start_trip"}`),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "not accepted",
			check: wantErrorStatus("reserved")},
		{name: "someone else's booking", req: post("drv-res", `{"type":"decline","booking_id":"bk-2"}`),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "does not hold that booking",
			check: wantErrorStatus("reserved")},
		{name: "lapsed reservation", req: post("drv-late", `{"type":"accept"}`),
			wantStatus: 409, wantCode: httpapi.CodeIllegalTransition, wantMsg: "lapsed",
			check: wantErrorStatus("reserved")},
		{name: "concurrent update", req: post("drv-1", `{"type":"go_offline"}`),
			setup:      func(f *fakeDrivers) { f.err = redisstore.ErrConflict },
			wantStatus: 409, wantCode: httpapi.CodeConflict},

		{name: "reserve is internal", req: post("drv-1", `{"type":"reserve","booking_id":"bk-3"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "made by Apollo"},
		{name: "expire is internal", req: post("drv-res", `{"type":"expire","booking_id":"bk-1"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "made by Apollo"},
		{name: "back_out is internal", req: post("drv-res", `{"type":"back_out","booking_id":"bk-1"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "made by Apollo"},
		{name: "unknown type", req: post("drv-1", `{"type":"teleport"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "type must be one of go_online, go_offline, accept"},
		{name: "type missing", req: post("drv-1", `{}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "type is required"},
		{name: "type not a string", req: post("drv-1", `{"type":7}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "type has a JSON number where a string is expected"},
		{name: "go_online without services", req: post("drv-off", `{"type":"go_online"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "services must list 1 to 16"},
		{name: "go_online with no services", req: post("drv-off", `{"type":"go_online","services":[]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "services must list"},
		{name: "go_online with a bad service", req: post("drv-off", `{"type":"go_online","services":["Car"]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "services must be"},
		{name: "go_online with a repeated service", req: post("drv-off", `{"type":"go_online","services":["car","car"]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "must not repeat"},
		{name: "services not strings", req: post("drv-off", `{"type":"go_online","services":[1]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "services.0 has a JSON number where a string is expected"},
		{name: "services with another event", req: post("drv-1", `{"type":"go_offline","services":["car"]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "services is only allowed with go_online"},
		{name: "booking with go_online", req: post("drv-off", `{"type":"go_online","services":["car"],"booking_id":"bk-1"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "booking_id is not allowed with go_online"},
		{name: "reserved_until with start_trip", req: post("drv-res", `{"type":"start_trip","reserved_until":"2024-03-01T12:05:00Z"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "reserved_until is only allowed with accept and decline"},
		{name: "reserved_until with go_offline", req: post("drv-1", `{"type":"go_offline","reserved_until":"2024-03-01T12:05:00Z"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "reserved_until is only allowed with accept and decline"},
		{name: "reserved_until zero", req: post("drv-res", `{"type":"decline","reserved_until":"0001-01-01T00:00:00Z"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "reserved_until must be the end of the reservation answered"},
		{name: "reserved_until a number", req: post("drv-res", `{"type":"decline","reserved_until":5}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "reserved_until has a JSON number where an RFC 3339 time string is expected"},
		{name: "reserved_until not a time", req: post("drv-res", `{"type":"decline","reserved_until":"soon"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "body has a time that is not RFC 3339"},
		{name: "malformed booking id", req: post("drv-res", `{"type":"accept","booking_id":"bk 1"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "booking_id must be 1 to 64"},
		{name: "empty booking id", req: post("drv-res", `{"type":"accept","booking_id":""}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "booking_id must be"},
		{name: "bad driver id", req: post("x{y}", `{"type":"go_offline"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be"},
		{name: "wrong method", req: request{method: "GET", target: "/v1/drivers/drv-1/events"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("POST")},
	}
	cases = append(cases, badBodies("POST", "/v1/drivers/drv-1/events", `{"type":"go_offline"}`)...)
	cases = append(cases, storeFailures(post("drv-1", `{"type":"go_offline"}`))...)
	runRouteCases(t, "POST /v1/drivers/{id}/events", cases)
}

func TestGetDriver(t *testing.T) {
	get := request{method: "GET", target: "/v1/drivers/drv-res"}
	cases := []routeCase{
		{name: "found", req: get, wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				want := `{"id":"drv-res","services":["car","bike"],"status":"reserved","location":{"lat":1.31,"lng":103.81},` +
					`"last_heartbeat":"2024-03-01T11:59:59Z","booking_id":"bk-1","reserved_until":"2024-03-01T12:05:00Z",` +
					`"accepted":false,"version":4,"available":false}` + "\n"
				if got := rec.Body.String(); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
			}},
		{name: "empty fields left out", req: request{method: "GET", target: "/v1/drivers/drv-off"}, wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				want := `{"id":"drv-off","services":[],"status":"offline","location":{"lat":0,"lng":0},"accepted":false,"version":2,"available":false}` + "\n"
				if got := rec.Body.String(); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
			}},
		{name: "HEAD", req: request{method: "HEAD", target: "/v1/drivers/drv-1"}, wantStatus: 200},
		{name: "not found", req: request{method: "GET", target: "/v1/drivers/nobody"},
			wantStatus: 404, wantCode: httpapi.CodeNotFound, wantMsg: "driver not found"},
		{name: "batch-get is an id for GET", req: request{method: "GET", target: "/v1/drivers/batch-get"},
			wantStatus: 404, wantCode: httpapi.CodeNotFound, wantMsg: "driver not found"},
		{name: "bad id", req: request{method: "GET", target: "/v1/drivers/a%20b"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "id must be"},
		{name: "wrong method", req: request{method: "DELETE", target: "/v1/drivers/drv-1"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("GET, HEAD")},
	}
	cases = append(cases, storeFailures(get)...)
	runRouteCases(t, "GET /v1/drivers/{id}", cases)
}

func TestBatchGet(t *testing.T) {
	const target = "/v1/drivers/batch-get"
	post := func(body string) request { return request{method: "POST", target: target, body: body} }
	ids := func(n int) string {
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf("d-%d", i)
		}
		return jsonOf(t, map[string]any{"ids": list})
	}
	cases := []routeCase{
		{name: "found, missing and failed", req: post(`{"ids":["drv-1","nobody","drv-1","drv-res","drv-off"]}`),
			setup: func(f *fakeDrivers) {
				f.failIDs["drv-res"] = fmt.Errorf("node 10.0.0.7:6379: %w", redisstore.ErrUnavailable)
				f.failIDs["drv-off"] = errors.New("node 10.0.0.8:6379: protocol error")
			},
			wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, f *fakeDrivers) {
				if want := []string{"drv-1", "nobody", "drv-res", "drv-off"}; !slices.Equal(f.gotIDs, want) {
					t.Errorf("store asked for %q, want duplicates folded: %q", f.gotIDs, want)
				}
				got := decodeMap(t, rec)
				if n := len(got["drivers"].([]any)); n != 1 {
					t.Errorf("drivers = %d, want 1", n)
				}
				if m := jsonOf(t, got["missing"]); m != `["nobody"]` {
					t.Errorf("missing = %s", m)
				}
				want := `[{"error":{"code":"unavailable","message":"storage is unavailable; try again"},"id":"drv-res"},` +
					`{"error":{"code":"internal","message":"internal error"},"id":"drv-off"}]`
				if f := jsonOf(t, got["failed"]); f != want {
					t.Errorf("failed = %s\nwant %s", f, want)
				}
				if strings.Contains(rec.Body.String(), "10.0.0.") {
					t.Errorf("internal detail leaked: %s", rec.Body)
				}
			}},
		{name: "all missing lists are arrays", req: post(`{"ids":["nobody"]}`), wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				if got, want := rec.Body.String(), `{"drivers":[],"missing":["nobody"],"failed":[]}`+"\n"; got != want {
					t.Errorf("body = %s, want %s", got, want)
				}
			}},
		{name: "exactly the maximum", req: post(ids(500)), wantStatus: 200},
		{name: "one over the maximum", req: post(ids(501)),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids must list 1 to 500 ids, got 501"},
		{name: "configured maximum", req: post(ids(3)), edit: func(c *httpapi.Config) { c.MaxBatch = 2 },
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "1 to 2 ids"},
		{name: "no ids", req: post(`{"ids":[]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids must list"},
		{name: "ids missing", req: post(`{}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids must list"},
		{name: "ids null", req: post(`{"ids":null}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids must list"},
		{name: "ids not an array", req: post(`{"ids":"drv-1"}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids has a JSON string where an array is expected"},
		{name: "an id not a string", req: post(`{"ids":["drv-1",2]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids.1 has a JSON number where a string is expected"},
		{name: "a malformed id", req: post(`{"ids":["drv-1","{drv-2}"]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids[1] must be 1 to 64"},
		{name: "an empty id", req: post(`{"ids":[""]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "ids[0] must be"},
		{name: "wrong method", req: request{method: "PUT", target: target},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("GET, HEAD, POST")},
	}
	cases = append(cases, badBodies("POST", target, `{"ids":["drv-1"]}`)...)
	cases = append(cases, storeFailures(post(`{"ids":["drv-1"]}`))...)
	runRouteCases(t, "POST /v1/drivers/batch-get", cases)
}

func TestNearby(t *testing.T) {
	get := func(query string) request { return request{method: "GET", target: "/v1/drivers/nearby?" + query} }
	const ok = "lat=1.3&lng=103.8&service=car"
	wantQuery := func(want redisstore.NearbyQuery) func(*testing.T, *httptest.ResponseRecorder, *fakeDrivers) {
		return func(t *testing.T, _ *httptest.ResponseRecorder, f *fakeDrivers) {
			if f.gotQuery != want {
				t.Errorf("store query = %+v, want %+v", f.gotQuery, want)
			}
		}
	}
	cases := []routeCase{
		{name: "defaults", req: get(ok), wantStatus: 200,
			check: wantQuery(redisstore.NearbyQuery{Lat: 1.3, Lng: 103.8, RadiusM: 2000, Service: "car", Limit: 20})},
		{name: "radius and limit", req: get(ok + "&radius_m=750.5&limit=5"), wantStatus: 200,
			check: wantQuery(redisstore.NearbyQuery{Lat: 1.3, Lng: 103.8, RadiusM: 750.5, Service: "car", Limit: 5})},
		{name: "largest radius and limit", req: get(ok + "&radius_m=20000&limit=100"), wantStatus: 200},
		{name: "drivers, failed cells and failed records", req: get(ok),
			setup: func(f *fakeDrivers) {
				f.nearby = redisstore.Nearby{
					Drivers:       []redisstore.NearbyDriver{{Driver: seedDrivers()[0], DistanceM: 12.5}},
					FailedCells:   []redisstore.Failure{{ID: "w21z7", Err: redisstore.ErrUnavailable}},
					FailedDrivers: []redisstore.Failure{{ID: "drv-2", Err: redisstore.ErrUnavailable}},
				}
			},
			wantStatus: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
				want := `{"drivers":[{"id":"drv-1","services":["car"],"status":"available","location":{"lat":1.3,"lng":103.8},` +
					`"last_heartbeat":"2024-03-01T11:59:55Z","accepted":false,"version":3,"available":true,"distance_m":12.5}],` +
					`"failed_cells":[{"cell":"w21z7","error":{"code":"unavailable","message":"storage is unavailable; try again"}}],` +
					`"failed_drivers":[{"id":"drv-2","error":{"code":"unavailable","message":"storage is unavailable; try again"}}]}` + "\n"
				if got := rec.Body.String(); got != want {
					t.Errorf("body\n got %s\nwant %s", got, want)
				}
			}},
		{name: "lat missing", req: get("lng=103.8&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat is required"},
		{name: "lat empty", req: get("lat=&lng=103.8&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat must be a finite number"},
		{name: "lat not a number", req: get("lat=north&lng=103.8&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat must be a finite number"},
		{name: "lat NaN", req: get("lat=NaN&lng=103.8&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat must be a finite number"},
		{name: "lng infinite", req: get("lat=1&lng=-Inf&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lng must be a finite number"},
		{name: "lat out of range", req: get("lat=-90.01&lng=103.8&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat must be within [-90, 90]"},
		{name: "lng out of range", req: get("lat=1&lng=181&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lng must be within [-180, 180]"},
		{name: "radius zero", req: get(ok + "&radius_m=0"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "radius_m must be within (0, 20000]"},
		{name: "radius negative", req: get(ok + "&radius_m=-5"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "radius_m must be within"},
		{name: "radius too large", req: get(ok + "&radius_m=20000.1"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "radius_m must be within"},
		{name: "radius overflows", req: get(ok + "&radius_m=1e400"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "radius_m must be a finite number"},
		{name: "limit zero", req: get(ok + "&limit=0"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "limit must be within [1, 100]"},
		{name: "limit too large", req: get(ok + "&limit=101"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "limit must be within [1, 100]"},
		{name: "limit fractional", req: get(ok + "&limit=1.5"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "limit must be an integer"},
		{name: "limit huge", req: get(ok + "&limit=99999999999999999999999"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "limit must be an integer"},
		{name: "service missing", req: get("lat=1&lng=2"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "service is required"},
		{name: "service malformed", req: get("lat=1&lng=2&service=Car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "service must be 1 to 32"},
		{name: "unknown parameter", req: get(ok + "&radius=5"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: `unknown parameter "radius"`},
		{name: "repeated parameter", req: get(ok + "&lat=2"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat must be given once"},
		{name: "bad escape", req: request{method: "GET", target: "/v1/drivers/nearby?lat=%zz"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "query is not a valid query string"},
		{name: "semicolon separator", req: get("lat=1;lng=2&service=car"),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "query is not a valid query string"},
		{name: "no query", req: request{method: "GET", target: "/v1/drivers/nearby"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "lat is required"},
		{name: "configured bounds", req: get(ok + "&radius_m=600"),
			edit:       func(c *httpapi.Config) { c.MaxRadiusM, c.DefaultRadiusM = 500, 100 },
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantMsg: "(0, 500]"},
		{name: "wrong method", req: request{method: "POST", target: "/v1/drivers/nearby", body: "{}"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, check: wantAllow("GET, HEAD")},
	}
	cases = append(cases, storeFailures(get(ok))...)
	runRouteCases(t, "GET /v1/drivers/nearby", cases)
}

func TestUnknownRoutesAreJSONErrors(t *testing.T) {
	doc := loadSpec(t)
	tests := []struct {
		req        request
		wantStatus int
		wantCode   httpapi.Code
		wantAllow  string
	}{
		{request{method: "GET", target: "/"}, 404, httpapi.CodeNotFound, ""},
		{request{method: "GET", target: "/v2/drivers/drv-1"}, 404, httpapi.CodeNotFound, ""},
		{request{method: "GET", target: "/v1/drivers/drv-1/location/extra"}, 404, httpapi.CodeNotFound, ""},
		{request{method: "POST", target: "/v1/drivers"}, 404, httpapi.CodeNotFound, ""},
		{request{method: "OPTIONS", target: "/v1/drivers/drv-1"}, 405, httpapi.CodeMethodNotAllowed, "GET, HEAD"},
		{request{method: "PATCH", target: "/v1/drivers/drv-1/events"}, 405, httpapi.CodeMethodNotAllowed, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.req.method+" "+tt.req.target, func(t *testing.T) {
			h := newHarness(t, newFake(), nil)
			rec := h.do(tt.req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if e := decodeError(t, rec); e.Error.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Error.Code, tt.wantCode)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			checkSpec(t, doc, "", tt.req, rec)
			if h.store.calls != 0 {
				t.Errorf("the store was called %d times", h.store.calls)
			}
		})
	}
}

func wantAllow(allow string) func(*testing.T, *httptest.ResponseRecorder, *fakeDrivers) {
	return func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
		if got := rec.Header().Get("Allow"); got != allow {
			t.Errorf("Allow = %q, want %q", got, allow)
		}
	}
}

func wantErrorStatus(status driver.Status) func(*testing.T, *httptest.ResponseRecorder, *fakeDrivers) {
	return func(t *testing.T, rec *httptest.ResponseRecorder, _ *fakeDrivers) {
		if got := decodeError(t, rec).Error.Status; got != string(status) {
			t.Errorf("error status = %q, want %q", got, status)
		}
	}
}
