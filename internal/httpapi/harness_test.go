package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
)

var testNow = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// seedDrivers are the drivers every fresh fake starts with.
func seedDrivers() []driver.Driver {
	return []driver.Driver{
		{ID: "drv-1", Services: []string{"car"}, Status: driver.StatusAvailable,
			Location: driver.Location{Lat: 1.3, Lng: 103.8}, LastHeartbeat: testNow.Add(-5 * time.Second), Version: 3},
		{ID: "drv-res", Services: []string{"car", "bike"}, Status: driver.StatusReserved,
			Location: driver.Location{Lat: 1.31, Lng: 103.81}, LastHeartbeat: testNow.Add(-time.Second),
			BookingID: "bk-1", ReservedUntil: testNow.Add(5 * time.Minute), Version: 4},
		{ID: "drv-late", Services: []string{"car"}, Status: driver.StatusReserved,
			LastHeartbeat: testNow.Add(-time.Second), BookingID: "bk-9", ReservedUntil: testNow.Add(-time.Second), Version: 7},
		{ID: "drv-off", Status: driver.StatusOffline, Version: 2},
	}
}

// syncBuffer is a log sink safe to read while handlers write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is one API handler over a fake store, with its own registry and
// captured JSON logs.
type harness struct {
	handler  http.Handler
	store    *fakeDrivers
	bookings *fakeBookings // seeded with seedBookings
	reg      *prometheus.Registry
	logs     *syncBuffer
}

func newHarness(t testing.TB, store *fakeDrivers, cfgEdit func(*httpapi.Config)) *harness {
	t.Helper()
	return buildHarness(t, store, cfgEdit, nil, true)
}

// newQuietHarness keeps no logs: a fuzzer would pile up millions of lines.
func newQuietHarness(t testing.TB, store *fakeDrivers, cfgEdit func(*httpapi.Config)) *harness {
	t.Helper()
	return buildHarness(t, store, cfgEdit, nil, false)
}

// buildHarness builds a harness; depsEdit, when given, changes its
// dependencies before the handler is made.
func buildHarness(t testing.TB, store *fakeDrivers, cfgEdit func(*httpapi.Config), depsEdit func(*httpapi.Deps), keepLogs bool) *harness {
	t.Helper()
	cfg := httpapi.DefaultConfig()
	if cfgEdit != nil {
		cfgEdit(&cfg)
	}
	h := &harness{store: store, bookings: newFakeBookings(seedBookings()...), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	log := slog.New(slog.DiscardHandler)
	if keepLogs {
		log = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	deps := httpapi.Deps{
		Drivers:    store,
		Bookings:   h.bookings,
		Rules:      driver.DefaultRules(),
		Now:        func() time.Time { return testNow },
		Log:        log,
		Registerer: h.reg,
	}
	if depsEdit != nil {
		depsEdit(&deps)
	}
	handler, err := httpapi.New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.handler = handler
	return h
}

// request describes one call to the API.
type request struct {
	method, target string
	contentType    string // "application/json" when empty and a body is given; "-" for none
	body           string
	header         http.Header
	unknownLength  bool // send the body without Content-Length, as a chunked upload would
}

func (h *harness) do(req request) *httptest.ResponseRecorder {
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequest(req.method, req.target, body)
	switch {
	case req.contentType == "-":
	case req.contentType != "":
		r.Header.Set("Content-Type", req.contentType)
	case req.body != "":
		r.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range req.header {
		r.Header[k] = vs
	}
	if req.unknownLength {
		r.ContentLength = -1
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, r)
	return rec
}

// apiError is the error body as a client sees it.
type apiError struct {
	Error struct {
		Code    httpapi.Code `json:"code"`
		Message string       `json:"message"`
		Status  string       `json:"status"`
	} `json:"error"`
}

// decodeError decodes an error response, failing the test if it is not
// one.
func decodeError(t testing.TB, rec *httptest.ResponseRecorder) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" {
		t.Fatalf("status %d, body %q is not an error response (%v)", rec.Code, rec.Body, err)
	}
	return e
}

// decodeMap decodes a JSON object body.
func decodeMap(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return m
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// doRequest serves a prepared request with body as JSON. Fuzz tests use it
// to send what httptest.NewRequest would refuse to parse.
func (h *harness) doRequest(r *http.Request, body string) *httptest.ResponseRecorder {
	if body != "" {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, r)
	return rec
}
