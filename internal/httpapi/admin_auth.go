package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// The admin plane's credential. Routes that change what Apollo does (PUT
// /v1/spampede/rules: an empty rule list turns the filter off) or show its
// internals (pprof: memory, goroutines, CPU on demand) need
// "Authorization: Bearer <token>"; the probes, /metrics and the read-only
// Spampede routes do not, so a scraper and a load balancer need no secret.
var (
	// errUnauthorized: a guarded route without the right token.
	errUnauthorized = errors.New("httpapi: the admin token is missing or wrong")
	// errNoAdminToken: a guarded route on an instance started without a
	// token, which keeps those routes closed to everyone.
	errNoAdminToken = errors.New("httpapi: no admin token is configured")
)

// guarded answers 401 unless the request carries token as a bearer
// credential. The tokens are compared as SHA-256 digests in constant time,
// so neither a prefix nor the length leaks through timing.
func (a responder) guarded(token string, h http.HandlerFunc) http.HandlerFunc {
	want := sha256.Sum256([]byte(token))
	return func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			a.fail(w, r, errNoAdminToken)
			return
		}
		got := sha256.Sum256([]byte(bearer(r)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="apollo-admin"`)
			a.fail(w, r, errUnauthorized)
			return
		}
		h(w, r)
	}
}

// bearer is the request's bearer credential, or "".
func bearer(r *http.Request) string {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}
