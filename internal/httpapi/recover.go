package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// recoverPanics turns a handler's panic into a logged 500, so one bad
// request costs one response rather than the connection, and the client
// still gets a JSON error. http.ErrAbortHandler is passed on: it is how a
// handler asks net/http to abort the response on purpose.
func (a *api) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			a.log.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
				slog.Any("panic", v),
				slog.String("route", r.Pattern),
				slog.String("request_id", RequestID(r.Context())),
				slog.String("stack", string(debug.Stack())),
			)
			if sw.wroteHeader() {
				return // too late for an error response; the client sees a short body
			}
			a.fail(sw, r, errRecovered)
		}()
		next.ServeHTTP(sw, r)
	})
}
