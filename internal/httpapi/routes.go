package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// api holds what the handlers share. It is built once by New and only read
// afterwards, but for its pool of buffers.
type api struct {
	responder    // its log also receives the access log
	cfg          Config
	drivers      Drivers
	bookings     Bookings
	rules        driver.Rules
	now          func() time.Time
	clockAhead   func() time.Duration // see Deps.ClockAhead
	stopping     context.Context      // see Deps.Stopping
	batchScratch sync.Pool            // *batchScratch
}

// route is one registered pattern and its handler.
type route struct {
	pattern string // ServeMux syntax: "METHOD /path/{wildcard}"
	handler http.HandlerFunc
}

// routes is the single list New registers and Routes reports, so the
// OpenAPI test checks exactly what is served.
func (a *api) routes() []route {
	return []route{
		{"PUT /v1/drivers/{id}/location", a.bounded(a.putLocation)},
		{"POST /v1/drivers/{id}/events", a.bounded(a.postEvent)},
		{"GET /v1/drivers/{id}", a.getDriver},
		{"POST /v1/drivers/batch-get", a.batchGet},
		// More specific than /v1/drivers/{id}, so ServeMux prefers it; a
		// driver whose id is "nearby" cannot be read with GET.
		{"GET /v1/drivers/nearby", a.nearby},
		{"POST /v1/bookings", a.bounded(a.createBooking)},
		{"GET /v1/bookings/{id}", a.getBooking},
		{"POST /v1/bookings/{id}/cancel", a.bounded(a.cancelBooking)},
	}
}

// Routes returns the patterns of the public API in ServeMux syntax,
// "METHOD /path", e.g. "GET /v1/drivers/{id}".
func Routes() []string {
	var patterns []string
	for _, rt := range (&api{}).routes() {
		patterns = append(patterns, rt.pattern)
	}
	return patterns
}

// New returns the public API handler. Middleware runs outermost first:
// request id (so everything after can log it), access log and metrics
// (which must see the final status, including a recovered panic's 500),
// panic recovery, then the mux.
func New(cfg Config, deps Deps) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi: config: %w", err)
	}
	deps, err := deps.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	a := &api{responder: responder{log: deps.Log}, cfg: cfg, drivers: deps.Drivers, bookings: deps.Bookings, rules: deps.Rules, now: deps.Now, clockAhead: deps.ClockAhead, stopping: deps.Stopping}

	var h http.Handler = a.serveMux(a.routes(), m.routed)
	h = a.recoverPanics(h)
	h = a.observe(h, m.forRoute(unmatchedRoute))
	h = withRequestID(h, newRequestIDs())
	return h, nil
}

// serveMux registers routes, and answers every request they do not match
// with a JSON 404 or 405. wrap, if not nil, wraps each route's handler
// given its label: the route's pattern, or unmatchedRoute for the 404 and
// 405 answers, a bounded label set whatever the path.
func (a responder) serveMux(routes []route, wrap func(label string, h http.Handler) http.Handler) *http.ServeMux {
	if wrap == nil {
		wrap = func(_ string, h http.Handler) http.Handler { return h }
	}
	mux := http.NewServeMux()
	methods := []string{http.MethodHead} // ServeMux serves HEAD with GET routes
	for _, rt := range routes {
		mux.Handle(rt.pattern, wrap(rt.pattern, rt.handler))
		if method, _, ok := strings.Cut(rt.pattern, " "); ok {
			methods = append(methods, method)
		}
	}
	slices.Sort(methods)
	methods = slices.Compact(methods)
	// "/" catches every request no route matches, so that ServeMux never
	// writes its own plain-text 404 or 405: both come out as JSON errors.
	mux.Handle("/", wrap(unmatchedRoute, a.noRoute(mux, methods)))
	return mux
}

// noRoute answers 405 when the path is served for other methods, else 404.
func (a responder) noRoute(mux *http.ServeMux, methods []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, methods, r); len(allow) > 0 {
			a.fail(w, r, &methodNotAllowedError{method: r.Method, allow: allow})
			return
		}
		a.fail(w, r, errNoRoute)
	}
}

// allowedMethods asks mux which of methods have a real route for r's path.
func allowedMethods(mux *http.ServeMux, methods []string, r *http.Request) []string {
	var allow []string
	for _, method := range methods {
		probe := &http.Request{Method: method, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, p := mux.Handler(probe); p != "" && p != "/" {
			allow = append(allow, method)
		}
	}
	return allow
}
