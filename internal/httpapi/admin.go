package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
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
	// Token is the admin credential that PUT /v1/spampede/rules and pprof
	// require (see admin_auth.go); empty keeps those routes closed.
	Token string
	// Cmdline is what /debug/pprof/cmdline shows: the process's arguments
	// with every secret already redacted (pprof's own handler prints
	// os.Args as they are, a password given by flag included).
	Cmdline []string
	// Console serves /console/ (the live console); absent when nil. Its
	// routes that change things (every method but GET and HEAD: the fault
	// panel) need the token.
	Console http.Handler
}

// NewAdmin returns the handler for the private admin listener: /metrics,
// /debug/pprof/, /livez, /readyz and the Spampede routes (see the package
// doc). It should not be exposed publicly even so: pprof reveals internals
// and can burn CPU on demand, and the Spampede rules decide who may book;
// both need deps.Token.
//
// The pprof handlers are registered here explicitly. (Importing
// net/http/pprof also registers them on http.DefaultServeMux, which Apollo
// never serves.) Every other path and method gets the public API's JSON
// 404 or 405.
func NewAdmin(deps AdminDeps) http.Handler {
	deps = deps.withDefaults()
	rp := responder{log: deps.Log}
	guard := func(h http.HandlerFunc) http.HandlerFunc { return rp.guarded(deps.Token, h) }
	routes := append(deps.healthRoutes(),
		route{"/debug/pprof/", guard(pprof.Index)}, // also serves named profiles: heap, goroutine, ...
		route{"/debug/pprof/cmdline", guard(deps.cmdline)},
		route{"/debug/pprof/profile", guard(pprof.Profile)},
		route{"/debug/pprof/symbol", guard(pprof.Symbol)},
		route{"/debug/pprof/trace", guard(pprof.Trace)},
	)
	sp := &spampedeAdmin{responder: rp, filter: deps.Spampede, now: deps.Now}
	for _, rt := range sp.routes() {
		switch {
		case deps.Spampede == nil:
			rt.handler = rp.failing(errSpampedeDisabled)
		case !strings.HasPrefix(rt.pattern, http.MethodGet+" "):
			rt.handler = guard(rt.handler)
		}
		routes = append(routes, rt)
	}
	if deps.Console != nil {
		routes = append(routes, route{"/console/", rp.readOnlyOpen(deps.Token, deps.Console)})
	}
	mux := rp.serveMux(routes, nil)
	return mux
}

// readOnlyOpen serves GET and HEAD to anyone and every other method only
// with the admin token.
func (a responder) readOnlyOpen(token string, h http.Handler) http.HandlerFunc {
	guarded := a.guarded(token, h.ServeHTTP)
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		guarded(w, r)
	}
}

// NewHealth returns the handler of a listener for probes and scrapes
// only: /metrics, /livez and /readyz, none of which needs the token.
func NewHealth(deps AdminDeps) http.Handler {
	deps = deps.withDefaults()
	mux := responder{log: deps.Log}.serveMux(deps.healthRoutes(), nil)
	return mux
}

func (deps AdminDeps) withDefaults() AdminDeps {
	if deps.Gatherer == nil {
		deps.Gatherer = prometheus.Gatherers{}
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return deps
}

// healthRoutes are /metrics and the probes.
func (deps AdminDeps) healthRoutes() []route {
	metrics := promhttp.HandlerFor(deps.Gatherer, promhttp.HandlerOpts{
		ErrorLog: promLogger{deps.Log},
		// A broken collector must not hide all the others.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return []route{
		{"GET /metrics", metrics.ServeHTTP},
		{"GET /livez", func(w http.ResponseWriter, r *http.Request) {
			// Live means the process can answer at all; it never checks
			// dependencies, or a Redis outage would get every pod restarted.
			writeText(w, http.StatusOK, "ok")
		}},
		{"GET /readyz", deps.readyz},
	}
}

// cmdline is pprof's cmdline answer (the arguments, NUL-separated) from
// the redacted Cmdline.
func (deps AdminDeps) cmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprint(w, strings.Join(deps.Cmdline, "\x00"))
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
