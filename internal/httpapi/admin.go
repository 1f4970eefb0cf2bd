package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminDeps are the collaborators of the admin handler. All are optional.
type AdminDeps struct {
	// Gatherer is served on /metrics; an empty set of metrics when nil.
	Gatherer prometheus.Gatherer
	// Ready reports whether the process can serve traffic (its stores
	// answer, say); nil means always ready.
	Ready func(ctx context.Context) error
	// Draining reports whether shutdown has begun: readiness then fails
	// first, so load balancers stop sending traffic before the listener
	// closes. nil means never draining.
	Draining func() bool
	// Log receives metric gathering and unexpected errors; discarded when nil.
	Log *slog.Logger
	// Spampede serves /v1/spampede/; when nil those routes answer 503
	// unavailable ("spampede is not enabled").
	Spampede Spampede
	// Now is the clock that decides which cells are tripped; time.Now when nil.
	Now func() time.Time
}

// NewAdmin returns the handler for the private admin listener: /metrics,
// /debug/pprof/, /livez, /readyz and the Spampede routes (see the package
// doc). It must never be exposed publicly: pprof reveals internals and can
// burn CPU on demand, and the Spampede rules decide who may book.
//
// The pprof handlers are registered here explicitly. (Importing
// net/http/pprof also registers them on http.DefaultServeMux, which Apollo
// never serves.) Every other path and method gets the public API's JSON
// 404 or 405.
func NewAdmin(deps AdminDeps) http.Handler {
	if deps.Gatherer == nil {
		deps.Gatherer = prometheus.Gatherers{}
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	rp := responder{log: deps.Log}
	metrics := promhttp.HandlerFor(deps.Gatherer, promhttp.HandlerOpts{
		ErrorLog: promLogger{deps.Log},
		// A broken collector must not hide all the others.
		ErrorHandling: promhttp.ContinueOnError,
	})
	routes := []route{
		{"GET /metrics", metrics.ServeHTTP},
		{"/debug/pprof/", pprof.Index}, // also serves named profiles: heap, goroutine, ...
		{"/debug/pprof/cmdline", pprof.Cmdline},
		{"/debug/pprof/profile", pprof.Profile},
		{"/debug/pprof/symbol", pprof.Symbol},
		{"/debug/pprof/trace", pprof.Trace},
		{"GET /livez", func(w http.ResponseWriter, r *http.Request) {
			// Live means the process can answer at all; it never checks
			// dependencies, or a Redis outage would get every pod restarted.
			writeText(w, http.StatusOK, "ok")
		}},
		{"GET /readyz", deps.readyz},
	}
	sp := &spampedeAdmin{responder: rp, filter: deps.Spampede, now: deps.Now}
	for _, rt := range sp.routes() {
		if deps.Spampede == nil {
			rt.handler = rp.failing(errSpampedeDisabled)
		}
		routes = append(routes, rt)
	}
	mux, _ := rp.serveMux(routes)
	return mux
}

// readyz is 503 with the reason while draining or not ready, else 200.
func (deps AdminDeps) readyz(w http.ResponseWriter, r *http.Request) {
	if deps.Draining != nil && deps.Draining() {
		writeText(w, http.StatusServiceUnavailable, "not ready: draining")
		return
	}
	if deps.Ready != nil {
		if err := deps.Ready(r.Context()); err != nil {
			deps.Log.LogAttrs(r.Context(), slog.LevelDebug, "not ready", slog.Any("err", err))
			writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	writeText(w, http.StatusOK, "ok")
}

func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, text)
}

// promLogger adapts slog to promhttp's Logger.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("serving metrics", slog.String("err", fmt.Sprint(v...)))
}
