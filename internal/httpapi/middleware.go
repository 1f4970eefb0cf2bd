package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// observe writes the access log line and the metrics of each request.
// route names the request's pattern; it is looked up before serving so a
// handler cannot change it.
func (a *api) observe(next http.Handler, m *metrics, route func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now() // a duration, not a decision: the real clock
		rt := route(r)
		sw := &statusWriter{ResponseWriter: w}
		inFlight := m.inFlight.WithLabelValues(rt)
		inFlight.Inc()
		defer inFlight.Dec()
		next.ServeHTTP(sw, r)
		took := time.Since(start)
		status := sw.statusOr200()
		m.observe(rt, status, took)
		a.log.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("method", r.Method),
			slog.String("route", rt),
			slog.Int("status", status),
			slog.Duration("duration", took),
			slog.Int64("bytes", sw.bytes),
			slog.String("request_id", RequestID(r.Context())),
		)
	})
}

// statusWriter remembers the status and counts the body bytes written.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the header is written
	bytes  int64
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
