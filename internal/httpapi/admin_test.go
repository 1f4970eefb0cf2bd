package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/spampede"
)

func TestAdmin(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "apollo_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)

	notReady := func(context.Context) error { return errors.New("redis: no primary for slot 42") }
	ready := func(context.Context) error { return nil }
	yes := func() bool { return true }
	no := func() bool { return false }

	const token = "0123456789abcdef-admin"
	authed := httpapi.AdminDeps{Token: token, Cmdline: []string{"apollo", "serve", "--redis-password=[redacted]"}}
	tests := []struct {
		name       string
		deps       httpapi.AdminDeps
		target     string
		wantStatus int
		wantBody   string // substring
	}{
		{"livez", httpapi.AdminDeps{Ready: notReady, Draining: yes}, "/livez", 200, "ok"},
		{"ready", httpapi.AdminDeps{Ready: ready, Draining: no}, "/readyz", 200, "ok"},
		{"ready without checks", httpapi.AdminDeps{}, "/readyz", 200, "ok"},
		{"not ready", httpapi.AdminDeps{Ready: notReady, Draining: no}, "/readyz", 503, "not ready: redis: no primary for slot 42"},
		{"draining wins over ready", httpapi.AdminDeps{Ready: ready, Draining: yes}, "/readyz", 503, "not ready: draining"},
		{"metrics", httpapi.AdminDeps{Gatherer: reg}, "/metrics", 200, "apollo_test_total 3"},
		{"metrics without a gatherer", httpapi.AdminDeps{}, "/metrics", 200, ""},
		{"pprof index", authed, "/debug/pprof/", 200, "goroutine"},
		{"pprof named profile", authed, "/debug/pprof/goroutine?debug=1", 200, "goroutine profile"},
		{"pprof cmdline, redacted by the caller", authed, "/debug/pprof/cmdline", 200, "apollo\x00serve\x00--redis-password=[redacted]"},
		{"nothing else", authed, "/v1/drivers/drv-1", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", tt.target, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			httpapi.NewAdmin(tt.deps).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tt.target, rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func TestAdminReadyGetsTheRequestContext(t *testing.T) {
	type key struct{}
	var got any
	h := httpapi.NewAdmin(httpapi.AdminDeps{Ready: func(ctx context.Context) error { got = ctx.Value(key{}); return nil }})
	req := httptest.NewRequest("GET", "/readyz", nil)
	h.ServeHTTP(httptest.NewRecorder(), req.WithContext(context.WithValue(req.Context(), key{}, "probe")))
	if got != "probe" {
		t.Errorf("Ready saw context value %v, want the request's context", got)
	}
}

func TestAdminIsNotOnDefaultServeMux(t *testing.T) {
	// Importing net/http/pprof registers on DefaultServeMux; the admin
	// handler must be its own mux, and the public API must not serve pprof.
	if httpapi.NewAdmin(httpapi.AdminDeps{}) == http.DefaultServeMux {
		t.Fatal("NewAdmin returned DefaultServeMux")
	}
	h := newHarness(t, newFake(), nil)
	if rec := h.do(request{method: "GET", target: "/debug/pprof/"}); rec.Code != 404 {
		t.Errorf("public API served /debug/pprof/: %d", rec.Code)
	}
}

// The routes that change Apollo or show its internals answer 401 without
// the admin token, with a wrong one, and on an instance started without
// one; the probes, /metrics and the read-only Spampede routes need none.
// consoleStub stands in for the console: it answers every request 200.
var consoleStub = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

func TestAdminRoutesThatChangeOrRevealNeedTheToken(t *testing.T) {
	const token = "0123456789abcdef-admin"
	guarded := []request{
		{method: "GET", target: "/debug/pprof/"},
		{method: "GET", target: "/debug/pprof/heap"},
		{method: "GET", target: "/debug/pprof/cmdline"},
		{method: "GET", target: "/debug/pprof/symbol"},
		{method: "GET", target: "/debug/pprof/profile?seconds=1"},
		{method: "GET", target: "/debug/pprof/trace?seconds=1"},
		{method: "PUT", target: "/v1/spampede/rules", body: validRules},
		{method: "POST", target: "/console/api/faults/node", body: `{"action":"kill","node":"127.0.0.1:7001"}`},
	}
	open := []request{
		{method: "GET", target: "/console/"},
		{method: "GET", target: "/console/api/state"},
		{method: "GET", target: "/livez"},
		{method: "GET", target: "/readyz"},
		{method: "GET", target: "/metrics"},
		{method: "GET", target: "/v1/spampede/rules"},
		{method: "GET", target: "/v1/spampede/cells"},
	}
	creds := []struct {
		name, token, header, wantMsg string
	}{
		{"no header", token, "", "needs the admin token"},
		{"wrong token", token, "Bearer " + token + "x", "needs the admin token"},
		{"a prefix of the token", token, "Bearer " + token[:8], "needs the admin token"},
		{"not a bearer credential", token, "Basic " + token, "needs the admin token"},
		{"no token configured", "", "Bearer anything", "started without --admin-token-file"},
	}
	for _, c := range creds {
		for _, req := range guarded {
			t.Run(c.name+" "+req.method+" "+req.target, func(t *testing.T) {
				f := &fakeSpampede{rules: spampede.DefaultRuleSet()}
				h := &harness{handler: httpapi.NewAdmin(httpapi.AdminDeps{Spampede: f, Token: c.token, Console: consoleStub})}
				if c.header != "" {
					req.header = http.Header{"Authorization": {c.header}}
				}
				rec := h.do(req)
				e := decodeError(t, rec)
				if rec.Code != http.StatusUnauthorized || e.Error.Code != httpapi.CodeUnauthorized || !strings.Contains(e.Error.Message, c.wantMsg) {
					t.Errorf("got %d %+v, want 401 unauthorized containing %q", rec.Code, e.Error, c.wantMsg)
				}
				if c.token != "" && rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				if len(f.saved) != 0 {
					t.Errorf("the rules were saved %d times without the token", len(f.saved))
				}
			})
		}
	}
	for _, req := range append(open, guarded[len(guarded)-2:]...) {
		t.Run("with the token "+req.method+" "+req.target, func(t *testing.T) {
			h := &harness{handler: httpapi.NewAdmin(httpapi.AdminDeps{Spampede: &fakeSpampede{rules: spampede.DefaultRuleSet()}, Token: token, Console: consoleStub})}
			req.header = http.Header{"Authorization": {"Bearer " + token}}
			if rec := h.do(req); rec.Code != 200 {
				t.Errorf("%s %s with the token = %d: %s", req.method, req.target, rec.Code, rec.Body)
			}
		})
	}
	for _, req := range open {
		t.Run("without a token "+req.method+" "+req.target, func(t *testing.T) {
			h := &harness{handler: httpapi.NewAdmin(httpapi.AdminDeps{Spampede: &fakeSpampede{rules: spampede.DefaultRuleSet()}, Token: token, Console: consoleStub})}
			if rec := h.do(req); rec.Code != 200 {
				t.Errorf("%s %s without a token = %d: %s", req.method, req.target, rec.Code, rec.Body)
			}
		})
	}
}

// The health handler serves the probes and /metrics, and nothing else.
func TestHealthServesProbesAndMetricsOnly(t *testing.T) {
	h := &harness{handler: httpapi.NewHealth(httpapi.AdminDeps{Token: "0123456789abcdef-admin", Spampede: &fakeSpampede{rules: spampede.DefaultRuleSet()}})}
	for target, want := range map[string]int{"/livez": 200, "/readyz": 200, "/metrics": 200,
		"/debug/pprof/": 404, "/v1/spampede/rules": 404, "/v1/drivers/d1": 404} {
		req := request{method: "GET", target: target, header: http.Header{"Authorization": {"Bearer 0123456789abcdef-admin"}}}
		if rec := h.do(req); rec.Code != want {
			t.Errorf("GET %s = %d, want %d", target, rec.Code, want)
		}
	}
}
