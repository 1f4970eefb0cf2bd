package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/httpapi"
)

// checkFuzzResponse is what every fuzzed exchange must satisfy with a
// healthy store: no 5xx, a JSON body, and on error a known code.
func checkFuzzResponse(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d with a healthy store: %s", rec.Code, rec.Body)
	}
	if rec.Code == 301 || rec.Code == 307 || rec.Code == 308 {
		return // ServeMux cleaning the path
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("status %d, body not a JSON object: %v: %q", rec.Code, err, rec.Body)
	}
	if rec.Code >= 400 {
		e := decodeError(t, rec)
		if !slices.Contains(httpapi.Codes(), e.Error.Code) {
			t.Fatalf("unknown code %q", e.Error.Code)
		}
	}
}

func FuzzEventsBody(f *testing.F) {
	for _, seed := range []string{
		`{"type":"go_online","services":["car"]}`, `{"type":"go_offline"}`, `{"type":"accept"}`,
		`{"type":"accept","booking_id":"bk-1"}`, `{"type":"decline","booking_id":"bk-2"}`,
		`{"type":"start_trip"}`, `{"type":"end_trip"}`, `{"type":"reserve","booking_id":"b"}`, `{"type":"expire"}`,
		`{"type":"go_online","services":["car","car"]}`, `{"type":"go_online","services":[]}`,
		`{"type":null}`, `{}`, `null`, `[]`, `{"type":"accept"}{}`, `{"type":1e999}`, "", `{"tYpE":"go_offline"}`,
	} {
		f.Add("drv-res", seed)
	}
	f.Add("drv-1", `{"type":"go_offline"}`)
	f.Add("drv-off", `{"type":"go_online","services":["car","bike"]}`)
	h := newQuietHarness(f, newFake(seedDrivers()...), nil)
	f.Fuzz(func(t *testing.T, id, body string) {
		req := httptest.NewRequest("POST", "/v1/drivers/x/events", nil)
		req.URL.Path = "/v1/drivers/" + id + "/events"
		rec := h.doRequest(req, body)
		checkFuzzResponse(t, rec)
	})
}

func FuzzBatchGetBody(f *testing.F) {
	for _, seed := range []string{
		`{"ids":["drv-1"]}`, `{"ids":["drv-1","drv-1","nobody","drv-res"]}`, `{"ids":[]}`, `{"ids":null}`,
		`{"ids":"drv-1"}`, `{"ids":[1,2]}`, `{"ids":[""]}`, `{"ids":["{x}"]}`, `{"ids":["a"],"x":1}`, `{"ids":["a"]} `,
		`{"ids":[["a"]]}`, `{"ids":{"a":1}}`, `{"ids":["\u0000"]}`, `{"ids":["a"]`, "",
	} {
		f.Add(seed)
	}
	h := newQuietHarness(f, newFake(seedDrivers()...), func(c *httpapi.Config) { c.MaxBatch = 20; c.MaxBodyBytes = 4096 })
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/v1/drivers/batch-get", nil)
		rec := h.doRequest(req, body)
		checkFuzzResponse(t, rec)
	})
}

func FuzzLocationBody(f *testing.F) {
	for _, seed := range []string{
		`{"lat":1.3,"lng":103.8}`, `{"lat":-90,"lng":180}`, `{"lat":90.0000001,"lng":0}`, `{"lat":1e308,"lng":-1e308}`,
		`{"lat":1e999,"lng":0}`, `{"lat":"1","lng":2}`, `{"lat":1}`, `{"lat":1,"lng":2,"lat":3}`, `{"LAT":1,"LNG":2}`,
		`{"lat":-0,"lng":0.0e0}`, `{"lat":1,"lng":2}garbage`, "\ufeff{}", "",
	} {
		f.Add(seed)
	}
	h := newQuietHarness(f, newFake(seedDrivers()...), func(c *httpapi.Config) { c.MaxBodyBytes = 4096 })
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("PUT", "/v1/drivers/drv-1/location", nil)
		rec := h.doRequest(req, body)
		checkFuzzResponse(t, rec)
	})
}

func FuzzNearbyQuery(f *testing.F) {
	for _, seed := range []string{
		"lat=1.3&lng=103.8&service=car", "lat=1.3&lng=103.8&service=car&radius_m=500&limit=5",
		"lat=NaN&lng=1&service=car", "lat=0x1p-2&lng=1&service=car", "lat=1&lng=2&service=car&limit=-1",
		"lat=1&lng=2&service=car&radius_m=Inf", "lat=1&lat=2", "lat=%zz", "a;b", "&&&=&=", "lat=1&lng=2&service=%00",
		"lat=1e400&lng=1&service=car", "", "radius_m=1e-320&lat=1&lng=1&service=bike",
	} {
		f.Add(seed)
	}
	h := newQuietHarness(f, newFake(seedDrivers()...), nil)
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req := httptest.NewRequest("GET", "/v1/drivers/nearby", nil)
		req.URL.RawQuery = rawQuery
		rec := h.doRequest(req, "")
		checkFuzzResponse(t, rec)
	})
}

// FuzzBookingBody sends arbitrary booking bodies and Idempotency-Keys.
func FuzzBookingBody(f *testing.F) {
	for _, seed := range []string{
		validBooking, `{"rider_id":"r1","service":"car","pickup":{"lat":0,"lng":0},"dropoff":{"lat":-90,"lng":180}}`,
		`{"rider_id":"r1","service":"car","pickup":{"lat":91,"lng":0},"dropoff":{"lat":0,"lng":0}}`,
		`{"rider_id":"r 1","service":"car","pickup":{"lat":1,"lng":2},"dropoff":{"lat":1,"lng":2}}`,
		`{"rider_id":"r1","service":"Car","pickup":{"lat":1,"lng":2},"dropoff":{"lat":1,"lng":2}}`,
		`{"rider_id":"r1","service":"car","pickup":{"lat":1e999,"lng":2},"dropoff":{"lat":1,"lng":2}}`,
		`{"rider_id":"r1","service":"car","pickup":null,"dropoff":{"lat":1,"lng":2}}`,
		`{"rider_id":"r1","service":"car","pickup":{"lat":1,"lng":2,"x":1},"dropoff":{}}`,
		`{"rider_id":"r1","service":"car","pickup":[1,2],"dropoff":"here"}`,
		`{"rider_id":1}`, `{}`, `null`, `[]`, `""`, validBooking + `{}`, "", "\ufeff{}",
	} {
		f.Add(true, "key-1", seed)
		f.Add(false, "", seed)
	}
	f.Add(true, "", validBooking)
	f.Add(true, "a\x00b", validBooking)
	f.Add(true, "\xff\xfe", validBooking)
	h := newQuietHarness(f, newFake(seedDrivers()...), func(c *httpapi.Config) { c.MaxBodyBytes = 4096 })
	f.Fuzz(func(t *testing.T, withKey bool, key, body string) {
		req := httptest.NewRequest("POST", "/v1/bookings", nil)
		if withKey {
			req.Header[httpapi.IdempotencyKeyHeader] = []string{key}
		}
		rec := h.doRequest(req, body)
		checkFuzzResponse(t, rec)
	})
}

// FuzzBookingQuery sends arbitrary query strings to the long poll; waits
// are capped at a millisecond so the fuzzer does not sleep.
func FuzzBookingQuery(f *testing.F) {
	for _, seed := range []string{
		"", "wait=1ms", "wait=1ms&version=1", "wait=1ms&version=0", "version=1", "wait=0s", "wait=-1ms", "wait=1h",
		"wait=1ms&version=-1", "wait=1ms&version=1e3", "wait=1ms&wait=1ms", "wait=%zz", "a;b", "wait=9223372036854775807ns",
		"wait=1ms&version=9223372036854775807", "timeout=1",
	} {
		f.Add("bk-search", seed)
	}
	f.Add("bk-done", "wait=1ms")
	f.Add("bk-nobody", "wait=1ms&version=2")
	h := newQuietHarness(f, newFake(seedDrivers()...), func(c *httpapi.Config) { c.MaxWait = time.Millisecond })
	f.Fuzz(func(t *testing.T, id, rawQuery string) {
		req := httptest.NewRequest("GET", "/v1/bookings/x", nil)
		req.URL.Path, req.URL.RawQuery = "/v1/bookings/"+id, rawQuery
		rec := h.doRequest(req, "")
		checkFuzzResponse(t, rec)
	})
}

// FuzzPath sends arbitrary paths and methods: whatever the router makes of
// them, the answer is JSON and never a 5xx.
func FuzzPath(f *testing.F) {
	for _, seed := range []string{
		"/v1/drivers/drv-1", "/v1/drivers/drv-1/location", "/v1/drivers/batch-get", "/v1/drivers/nearby",
		"/v1/bookings", "/v1/bookings/bk-search", "/v1/bookings/bk-search/cancel", "/v1/bookings//cancel", "/v1/bookings/",
		"/", "/v1/drivers/", "/v1/drivers//events", "/v1/drivers/../drivers/x", "/v1/drivers/%7B%7D", "/v1/drivers/\x00",
	} {
		f.Add("GET", seed)
	}
	f.Add("DELETE", "/v1/drivers/drv-1")
	f.Add("PUT", "/v1/drivers/batch-get")
	f.Add("POST", "/v1/bookings/bk-alloc/cancel")
	f.Add("POST", "/v1/bookings")
	h := newQuietHarness(f, newFake(seedDrivers()...), nil)
	f.Fuzz(func(t *testing.T, method, path string) {
		if !validMethod(method) {
			t.Skip("net/http refuses such requests before any handler")
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.Method, req.URL.Path = method, path
		rec := h.doRequest(req, "")
		if method == "HEAD" {
			if rec.Code >= 500 {
				t.Fatalf("status %d", rec.Code)
			}
			return
		}
		checkFuzzResponse(t, rec)
	})
}

// validMethod is net/http's token rule for methods.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || slices.Contains([]byte(`()<>@,;:\"/[]?={}`), c) {
			return false
		}
	}
	return true
}
