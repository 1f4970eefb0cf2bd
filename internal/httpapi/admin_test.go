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
		{"pprof index", httpapi.AdminDeps{}, "/debug/pprof/", 200, "goroutine"},
		{"pprof named profile", httpapi.AdminDeps{}, "/debug/pprof/goroutine?debug=1", 200, "goroutine profile"},
		{"pprof cmdline", httpapi.AdminDeps{}, "/debug/pprof/cmdline", 200, ""},
		{"nothing else", httpapi.AdminDeps{}, "/v1/drivers/drv-1", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpapi.NewAdmin(tt.deps).ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
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
