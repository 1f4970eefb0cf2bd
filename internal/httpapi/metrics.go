package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// unmatchedRoute labels requests no route matched, so that scanners and
// typos cannot grow the label set.
const unmatchedRoute = "unmatched"

// metrics are labelled by route pattern and status code, never by raw
// path: one time series per route, not per driver.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apollo_http_requests_total", Help: "HTTP requests served, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apollo_http_request_duration_seconds", Help: "Time to serve an HTTP request, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apollo_http_requests_in_flight", Help: "HTTP requests being served, by route pattern (long polls waiting among them).",
		}, []string{"route"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("httpapi: register metrics"), err)
		}
	}
	return m, nil
}

// routeMetrics are one route's series, looked up once rather than by
// label values on every request: three lookups a request, with the second
// route match that named the route (see routed), were about 40 % of the
// middleware's CPU in BenchmarkBatchGetHandler's profile. A series still
// appears on the route's first request, not before, as it did when looked
// up by labels.
type routeMetrics struct {
	route  string
	m      *metrics
	once   sync.Once
	series struct {
		duration prometheus.Observer
		inFlight prometheus.Gauge
	}
	byCode [600 - 100]atomic.Pointer[prometheus.Counter] // status 100 to 599
}

func (m *metrics) forRoute(route string) *routeMetrics {
	return &routeMetrics{route: route, m: m}
}

// routed wraps h, the handler of the route labelled route, with its own
// series (see routeMetrics.routed).
func (m *metrics) routed(route string, h http.Handler) http.Handler {
	return m.forRoute(route).routed(h)
}

func (rm *routeMetrics) inFlight() prometheus.Gauge {
	rm.once.Do(rm.resolve)
	return rm.series.inFlight
}

func (rm *routeMetrics) resolve() {
	rm.series.duration = rm.m.duration.WithLabelValues(rm.route)
	rm.series.inFlight = rm.m.inFlight.WithLabelValues(rm.route)
}

func (rm *routeMetrics) observe(status int, d time.Duration) {
	rm.once.Do(rm.resolve)
	rm.requests(status).Inc()
	rm.series.duration.Observe(d.Seconds())
}

// requests is the route's request counter for status, kept once made.
func (rm *routeMetrics) requests(status int) prometheus.Counter {
	i := status - 100
	if i < 0 || i >= len(rm.byCode) {
		return rm.m.requests.WithLabelValues(rm.route, strconv.Itoa(status))
	}
	if c := rm.byCode[i].Load(); c != nil {
		return *c
	}
	c := rm.m.requests.WithLabelValues(rm.route, strconv.Itoa(status))
	rm.byCode[i].Store(&c) // a racing twin stores the same series
	return c
}
