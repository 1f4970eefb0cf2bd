package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"net/http"
	"strconv"
	"sync/atomic"
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
// request across services, and otherwise makes one from ids. The id is
// echoed in the response header and put in the request's context.
func withRequestID(next http.Handler, ids *requestIDs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID(id) {
			id = ids.next()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// requestIDs makes ids unique across a fleet without reading the system's
// random source on every request (that read, a system call, was about an
// eighth of the middleware's CPU): 64 random bits drawn once per API, then
// a counter, "<13 base32 characters>-<counter in base 32>". An id names a request;
// it is not a secret, so that it can be guessed does not matter.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var seed [8]byte
	rand.Read(seed[:]) // never fails: see crypto/rand.Read
	// Lower case, the counter's digits (strconv's base 32).
	enc := base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)
	return &requestIDs{prefix: enc.EncodeToString(seed[:])}
}

func (g *requestIDs) next() string {
	var b [13 + 1 + 13]byte // prefix, '-', a uint64 in base 32
	s := append(append(b[:0], g.prefix...), '-')
	return string(strconv.AppendUint(s, g.n.Add(1), 32))
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
