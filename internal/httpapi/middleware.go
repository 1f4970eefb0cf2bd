package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// observe writes the access log line and the metrics of each request,
// under the route that served it (see routed); a request no route took,
// such as ServeMux's own redirect of an unclean path, counts as unmatched.
func (a *api) observe(next http.Handler, unmatched *routeMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now() // a duration, not a decision: the real clock
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		took := time.Since(start)
		rm := sw.route
		if rm == nil {
			rm = unmatched
		}
		status := sw.statusOr200()
		rm.observe(status, took)
		a.log.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("method", r.Method),
			slog.String("route", rm.route),
			slog.Int("status", status),
			slog.Duration("duration", took),
			slog.Int64("bytes", sw.bytes),
			slog.String("request_id", RequestID(r.Context())),
		)
	})
}

// routed wraps the handler of one registered route: it counts the request
// in flight while it runs, and names the route to observe. The route is
// the one ServeMux chose, known at registration, so no request is matched
// twice.
func (rm *routeMetrics) routed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := w.(*statusWriter); ok {
			sw.route = rm
		}
		inFlight := rm.inFlight()
		inFlight.Inc()
		defer inFlight.Dec()
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status and counts the body bytes written.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the header is written
	bytes  int64
	route  *routeMetrics // set by routed; nil if no route took the request
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) wroteHeader() bool { return w.status != 0 }

// statusOr200 is the status sent: a handler that writes nothing sends 200.
func (w *statusWriter) statusOr200() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
