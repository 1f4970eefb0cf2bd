package redisroute_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*redisroute.Config)
		want string
	}{
		{"default with a seed", func(*redisroute.Config) {}, ""},
		{"no seeds", func(c *redisroute.Config) { c.Addrs = nil }, "seed address"},
		{"seed without port", func(c *redisroute.Config) { c.Addrs = []string{"localhost"} }, "host:port"},
		{"unknown policy", func(c *redisroute.Config) { c.Policy = "fastest" }, "unknown read policy"},
		{"zero call timeout", func(c *redisroute.Config) { c.CallTimeout = 0 }, "call timeout must be positive"},
		{"hedge min above max", func(c *redisroute.Config) { c.HedgeMin = time.Second }, "exceeds hedge max"},
		{"budget above 1", func(c *redisroute.Config) { c.HedgeBudget = 2 }, "hedge budget must be within [0, 1]"},
		{"fail fast before a stall", func(c *redisroute.Config) { c.FailFastAfter = c.StallAfter / 2 }, "shorter than stall after"},
		{"a stall too long for a write's proof", func(c *redisroute.Config) { c.StallAfter, c.FailFastAfter = 200*time.Millisecond, time.Second }, "more than half the ack timeout"},
		{"pool of zero", func(c *redisroute.Config) { c.PoolSize = 0 }, "pool size"},
		{"negative coalescing", func(c *redisroute.Config) { c.CoalesceAfter = -1 }, "coalesce after must be 0 (off) or more"},
		{"negative fallback rate", func(c *redisroute.Config) { c.PrimaryFallbackRate = -1 }, "must not be negative"},
		{"replica lag below Redis's resolution", func(c *redisroute.Config) { c.MaxReplicaLag = 500 * time.Millisecond }, "max replica lag must be at least 1s"},
		{"zero replica check interval", func(c *redisroute.Config) { c.ReplicaCheckInterval = 0 }, "replica check interval must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := redisroute.DefaultConfig()
			c.Addrs = []string{"127.0.0.1:7000"}
			tt.edit(&c)
			err := c.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFlagsSetPolicyAddrsAndTLS(t *testing.T) {
	c := redisroute.DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := c.RegisterFlags(fs)
	err := fs.Parse([]string{"--redis-addrs", "10.0.0.1:7000, 10.0.0.2:7000", "--read-policy", "nearest", "--redis-tls", "--redis-tls-server-name", "redis.internal",
		"--redis-max-replica-lag", "5s", "--redis-source-addr", "10.0.0.9"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Apply(&c); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Addrs, "|"); got != "10.0.0.1:7000|10.0.0.2:7000" {
		t.Errorf("addrs = %s", got)
	}
	if c.Policy != redisroute.Nearest || c.TLS == nil || c.TLS.ServerName != "redis.internal" {
		t.Errorf("policy %s, tls %+v", c.Policy, c.TLS)
	}
	if c.MaxReplicaLag != 5*time.Second {
		t.Errorf("max replica lag = %s, want 5s", c.MaxReplicaLag)
	}
	if c.SourceAddr.String() != "10.0.0.9" {
		t.Errorf("source addr = %s, want 10.0.0.9", c.SourceAddr)
	}
	bad := redisroute.DefaultConfig()
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	f = bad.RegisterFlags(fs)
	if err := fs.Parse([]string{"--redis-source-addr", "10.0.0.9:7000"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Apply(&bad); err == nil || !strings.Contains(err.Error(), "not an IP address") {
		t.Errorf("a source address with a port: %v", err)
	}
	if err := fs.Parse([]string{"--read-policy", "fastest"}); err == nil || !strings.Contains(err.Error(), "unknown read policy") {
		t.Errorf("bad policy flag: %v", err)
	}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range redisroute.Policies() {
		if got, err := redisroute.ParsePolicy(string(p)); err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %q, %v", p, got, err)
		}
	}
	if _, err := redisroute.ParsePolicy("replica"); err == nil {
		t.Error("ParsePolicy accepted an unknown name")
	}
}
