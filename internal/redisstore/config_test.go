package redisstore_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// TestDriverTTLMustOutliveStalenessByFar: a driver hash that expired a few
// missed heartbeats after going quiet would log drivers off in every tunnel,
// so the store refuses a TTL under 10 × StaleAfter, and a negative sweep wait.
func TestDriverTTLMustOutliveStalenessByFar(t *testing.T) {
	cases := []struct {
		name string
		edit func(*redisstore.Config, *driver.Rules)
		want string // "" = valid
	}{
		{"defaults", func(*redisstore.Config, *driver.Rules) {}, ""},
		{"no ttl", func(c *redisstore.Config, _ *driver.Rules) { c.DriverTTL = 0 }, "driver ttl must be at least 1s"},
		{"ttl a few heartbeats long", func(c *redisstore.Config, _ *driver.Rules) { c.DriverTTL = time.Minute }, "at least 10 × driver.stale-after"},
		{"ttl exactly 10 × stale-after", func(c *redisstore.Config, _ *driver.Rules) { c.DriverTTL = 5 * time.Minute }, ""},
		{"stale-after raised past the ttl", func(_ *redisstore.Config, r *driver.Rules) { r.StaleAfter = 10 * time.Minute }, "at least 10 × driver.stale-after"},
		{"sweep off", func(c *redisstore.Config, _ *driver.Rules) { c.SweepWait = 0 }, ""},
		{"negative sweep wait", func(c *redisstore.Config, _ *driver.Rules) { c.SweepWait = -time.Millisecond }, "sweep wait must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, rules := redisstore.DefaultConfig(), driver.DefaultRules()
			tc.edit(&cfg, &rules)
			_, err := redisstore.NewDrivers(nil, cfg, rules)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("NewDrivers: %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("NewDrivers: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestStoreFlags(t *testing.T) {
	cfg := redisstore.DefaultConfig()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"--driver-ttl=2h", "--nearby-sweep-wait=10ms"}); err != nil {
		t.Fatal(err)
	}
	if cfg.DriverTTL != 2*time.Hour || cfg.SweepWait != 10*time.Millisecond {
		t.Errorf("after flags: driver ttl %v, sweep wait %v; want 2h, 10ms", cfg.DriverTTL, cfg.SweepWait)
	}
}
