package httpapi

import (
	"context"
	"crypto/rand"
	"net/http"
)

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds an accepted incoming id; it ends up in every log
// line of the request.
const maxRequestIDLen = 128

type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "" outside a
// request served by this package.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID keeps a sane incoming X-Request-Id, so one id follows a
// request across services, and otherwise makes one. The id is echoed in
// the response header and put in the request's context.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID(id) {
			id = rand.Text() // 26 base32 characters, 130 random bits
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// saneRequestID accepts 1 to 128 characters from [A-Za-z0-9._:-]: enough
// for UUIDs and trace ids, nothing that could forge a log field or a header.
func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
