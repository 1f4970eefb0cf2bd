package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// Config is everything apollo serve can be told.
type Config struct {
	Redis redisroute.Config
	Store redisstore.Config
	Rules driver.Rules
	API   httpapi.Config

	Listen      string // public API
	AdminListen string // metrics, pprof, health: keep it private
	// DrainDelay is how long readiness reports 503 before the listeners
	// close, so load balancers stop sending traffic first.
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	LogFormat       string // json or text

	redisFlags *redisroute.Flags
}

// DefaultConfig returns the defaults of apollo serve.
func DefaultConfig() Config {
	return Config{
		Redis:           redisroute.DefaultConfig(),
		Store:           redisstore.DefaultConfig(),
		Rules:           driver.DefaultRules(),
		API:             httpapi.DefaultConfig(),
		Listen:          ":8080",
		AdminListen:     "127.0.0.1:9090",
		DrainDelay:      2 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		LogLevel:        slog.LevelInfo,
		LogFormat:       "json",
	}
}

// RegisterFlags registers every setting on fs. Call Finish after parsing.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.redisFlags = c.Redis.RegisterFlags(fs)
	c.Store.RegisterFlags(fs)
	c.Rules.RegisterFlags(fs)
	c.API.RegisterFlags(fs)
	fs.StringVar(&c.Listen, "listen", c.Listen, "address of the public HTTP API")
	fs.StringVar(&c.AdminListen, "admin-listen", c.AdminListen, "address of the admin listener (/metrics, /debug/pprof/, /livez, /readyz)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.DrainDelay, "on shutdown, report not-ready for this long before closing listeners")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests get to finish on shutdown")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "json or text")
}

// Finish applies flag-only settings; call it after parsing.
func (c *Config) Finish() error {
	if c.redisFlags == nil {
		return nil
	}
	return c.redisFlags.Apply(&c.Redis)
}

// Validate reports every problem, from every part.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Redis.Validate(), c.Store.Validate(), c.Rules.Validate(), c.API.Validate())
	if c.Listen == "" || c.AdminListen == "" {
		errs = append(errs, errors.New("listen and admin-listen addresses are required"))
	}
	if c.DrainDelay < 0 || c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain delay must not be negative and shutdown timeout must be positive"))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("log format must be json or text, got %q", c.LogFormat))
	}
	return errors.Join(errs...)
}

// Redacted is the config as it may be logged: no secrets.
func (c Config) Redacted() map[string]any {
	pw := ""
	if c.Redis.Password != "" {
		pw = "[redacted]"
	}
	return map[string]any{
		"redis_addrs": c.Redis.Addrs, "redis_user": c.Redis.Username, "redis_password": pw,
		"redis_tls": c.Redis.TLS != nil, "read_policy": c.Redis.Policy, "redis_call_timeout": c.Redis.CallTimeout.String(),
		"listen": c.Listen, "admin_listen": c.AdminListen, "driver_stale_after": c.Rules.StaleAfter.String(),
		"geo_cell_bits": c.Store.GeoCellBits, "drain_delay": c.DrainDelay.String(),
	}
}
