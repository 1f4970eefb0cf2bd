package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/httpapi"
)

// TestOverRealConnections runs a few exchanges through net/http's real
// server, where body limits and connection handling actually apply.
func TestOverRealConnections(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHarness(t, newFake(seedDrivers()...), func(c *httpapi.Config) { c.MaxBodyBytes = 64 })
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	tests := []struct {
		name       string
		method     string
		path       string
		body       io.Reader // a plain io.Reader is sent chunked, without Content-Length
		wantStatus int
		wantCode   httpapi.Code
	}{
		{"heartbeat", "PUT", "/v1/drivers/drv-1/location", strings.NewReader(`{"lat":1,"lng":2}`), 200, ""},
		{"chunked body over the limit", "PUT", "/v1/drivers/drv-1/location",
			io.MultiReader(strings.NewReader(`{"lat":1,"lng":2,"pad":"`), strings.NewReader(strings.Repeat("x", 4096)), strings.NewReader(`"}`)),
			413, httpapi.CodePayloadTooLarge},
		{"unknown path", "GET", "/nope", nil, 404, httpapi.CodeNotFound},
		{"wrong method", "PATCH", "/v1/drivers/drv-1", nil, 405, httpapi.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", "e2e-1")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rec := httptest.NewRecorder()
			rec.Code = resp.StatusCode
			if _, err := io.Copy(rec.Body, resp.Body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.wantStatus, rec.Body)
			}
			if tt.wantCode != "" {
				if e := decodeError(t, rec); e.Error.Code != tt.wantCode {
					t.Errorf("code = %q, want %q", e.Error.Code, tt.wantCode)
				}
			}
			if got := resp.Header.Get("X-Request-Id"); got != "e2e-1" {
				t.Errorf("X-Request-Id = %q", got)
			}
		})
	}
}
