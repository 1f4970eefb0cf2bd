package httpapi_test

import (
	"flag"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*httpapi.Config)
		want string // substring of the error; "" for valid
	}{
		{"default", func(*httpapi.Config) {}, ""},
		{"zero body limit", func(c *httpapi.Config) { c.MaxBodyBytes = 0 }, "api-max-body-bytes must be positive"},
		{"zero batch", func(c *httpapi.Config) { c.MaxBatch = 0 }, "api-max-batch must be positive"},
		{"infinite radius", func(c *httpapi.Config) { c.MaxRadiusM = math.Inf(1) }, "api-max-radius-m"},
		{"NaN radius", func(c *httpapi.Config) { c.MaxRadiusM = math.NaN() }, "api-max-radius-m"},
		{"default radius above max", func(c *httpapi.Config) { c.DefaultRadiusM = 30_000 }, "api-default-radius-m must be within (0, 20000]"},
		{"zero default radius", func(c *httpapi.Config) { c.DefaultRadiusM = 0 }, "api-default-radius-m"},
		{"zero limit", func(c *httpapi.Config) { c.MaxLimit = 0 }, "api-max-limit must be positive"},
		{"default limit above max", func(c *httpapi.Config) { c.DefaultLimit = 101 }, "api-default-limit must be within [1, 100]"},
		{"zero wait", func(c *httpapi.Config) { c.MaxWait = 0 }, "api-max-wait must be positive"},
		{"zero request timeout", func(c *httpapi.Config) { c.RequestTimeout = 0 }, "api-request-timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := httpapi.DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestConfigFlags(t *testing.T) {
	c := httpapi.DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	err := fs.Parse([]string{
		"-api-max-body-bytes", "2048", "-api-max-batch", "10", "-api-max-radius-m", "5000",
		"-api-default-radius-m", "100", "-api-max-limit", "50", "-api-default-limit", "5", "-api-max-wait", "10s",
		"-api-request-timeout", "2s",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := httpapi.Config{MaxBodyBytes: 2048, MaxBatch: 10, MaxRadiusM: 5000, DefaultRadiusM: 100, MaxLimit: 50, DefaultLimit: 5, MaxWait: 10 * time.Second, RequestTimeout: 2 * time.Second}
	if c != want {
		t.Errorf("config = %+v, want %+v", c, want)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "api-") {
			t.Errorf("flag %q lacks the api- prefix", f.Name)
		}
	})
}

func TestNewRefusesBadSetup(t *testing.T) {
	good := httpapi.Deps{Drivers: newFake(), Rules: driver.DefaultRules()}
	tests := []struct {
		name string
		cfg  func(*httpapi.Config)
		deps func(*httpapi.Deps)
		want string
	}{
		{"no store", nil, func(d *httpapi.Deps) { d.Drivers = nil }, "Drivers is required"},
		{"zero rules", nil, func(d *httpapi.Deps) { d.Rules = driver.Rules{} }, "stale-after"},
		{"negative staleness", nil, func(d *httpapi.Deps) { d.Rules.StaleAfter = -time.Second }, "stale-after"},
		{"bad config", func(c *httpapi.Config) { c.MaxBatch = -1 }, nil, "api-max-batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, deps := httpapi.DefaultConfig(), good
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			if tt.deps != nil {
				tt.deps(&deps)
			}
			if _, err := httpapi.New(cfg, deps); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
