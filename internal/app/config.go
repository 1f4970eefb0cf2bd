package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/secret"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Config is everything apollo serve can be told.
type Config struct {
	Redis redisroute.Config
	Store redisstore.Config
	Rules driver.Rules
	API   httpapi.Config

	Spampede spampede.Config
	// SpampedeRulesFile seeds the shared rule set when Redis holds none.
	SpampedeRulesFile string
	// RulesPollEvery: how soon a rule change reaches every instance.
	RulesPollEvery time.Duration
	Dispatch       dispatch.Config
	Booking        booking.Config
	Fleet          fleet.Config
	// InstanceID names this instance in the fleet (default: host-pid-random).
	InstanceID string
	// ClockOffset, for drills, runs the instance as if its host's clock
	// were off by this much: the router reads the nodes' clocks against
	// it (Redis.Wall). Apollo keeps the cluster's time, so what it records
	// should not move (verify's instance-clock fault).
	ClockOffset time.Duration
	// BookingAcks replicas must acknowledge (WAIT) a booking's every write,
	// and a driver's reservation, before it is reported done. One keeps
	// them through any one node failing and the cluster's own failovers;
	// a forced failover (CLUSTER FAILOVER FORCE) keeps only what the
	// promoted replica had, and the old primary's other replicas go on
	// acknowledging for the milliseconds before it learns, so only every
	// replica of a shard keeps them through one, at the price of that
	// shard's writes failing while any of its replicas is down.
	BookingAcks int

	Listen      string // public API
	AdminListen string // metrics, pprof, health, Spampede rules: keep it private
	// HealthListen, if set, also serves /metrics, /livez and /readyz on a
	// listener of their own, for scrapers and load balancers that should
	// not reach the admin routes at all.
	HealthListen string
	// AdminTokenFile holds the admin token; Finish reads it into AdminToken.
	AdminTokenFile string
	// AdminToken is the bearer credential that the admin routes which
	// change Apollo (PUT /v1/spampede/rules) or show its internals (pprof)
	// require. Never logged. Empty keeps those routes closed.
	AdminToken string
	// Cmdline is what /debug/pprof/cmdline shows: the command sets it to
	// its arguments with SecretFlags redacted.
	Cmdline []string
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
		Spampede:        spampede.DefaultConfig(),
		RulesPollEvery:  time.Second,
		Dispatch:        dispatch.DefaultConfig(),
		Booking:         booking.DefaultConfig(),
		Fleet:           fleet.DefaultConfig(),
		BookingAcks:     1,
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
	fs.StringVar(&c.SpampedeRulesFile, "spampede-rules-file", c.SpampedeRulesFile, "JSON rule set that seeds the Spampede filter when Redis holds none (default: Singapore, threshold 20 per 60 s)")
	fs.DurationVar(&c.Spampede.StoreTimeout, "spampede-timeout", c.Spampede.StoreTimeout, "admit (fail open) when the Spampede counters do not answer within this")
	fs.DurationVar(&c.Spampede.CountTimeout, "spampede-count-timeout", c.Spampede.CountTimeout, "with --spampede-count-at first-miss, a new booking without a driver goes uncounted when the Spampede counters do not take its count within this (its answer waits for it)")
	fs.IntVar(&c.Spampede.CountRejectedEvery, "spampede-count-rejected-every", c.Spampede.CountRejectedEvery, "count every n-th booking a tripped cell turns away as a miss, so a storm that goes on keeps it tripped (0: never)")
	fs.StringVar((*string)(&c.Booking.CountAt), "spampede-count-at", string(c.Booking.CountAt), "when Spampede counts a booking without a driver: first-miss (its first attempt found none) or deadline (it gave up)")
	fs.DurationVar(&c.Booking.AllocationTimeout, "allocation-timeout", c.Booking.AllocationTimeout, "a booking with no driver after this is unallocated")
	fs.DurationVar(&c.Booking.RetryMin, "retry-min", c.Booking.RetryMin, "a booking that found no driver is tried again after this; each further miss doubles the wait")
	fs.DurationVar(&c.Booking.RetryMax, "retry-max", c.Booking.RetryMax, "the longest wait between two attempts to find a booking a driver")
	fs.DurationVar(&c.Booking.ScanEvery, "booking-scan-every", c.Booking.ScanEvery, "how often due bookings are claimed (retried, expired, resumed) and lapsed reservations swept")
	fs.DurationVar(&c.Booking.ClaimHold, "booking-claim-hold", c.Booking.ClaimHold, "how long a claimed booking is kept from other scans before it is due again if nothing rescheduled it")
	c.Fleet.RegisterFlags(fs)
	fs.StringVar(&c.InstanceID, "instance-id", c.InstanceID, "this instance's name in the fleet, unique among the instances (default: host-pid-random)")
	fs.DurationVar(&c.ClockOffset, "clock-offset", c.ClockOffset, "for drills: run as if this host's clock were off by this much (Apollo keeps the Redis cluster's time, so nothing it records should move; verify's instance-clock fault)")
	fs.DurationVar(&c.Dispatch.ReservationTTL, "reservation-ttl", c.Dispatch.ReservationTTL, "how long a reserved driver has to accept")
	fs.Float64Var(&c.Dispatch.RadiusM, "dispatch-radius-m", c.Dispatch.RadiusM, "how far from the pickup drivers are searched")
	fs.IntVar(&c.BookingAcks, "booking-acks", c.BookingAcks, "replicas that must acknowledge each booking write and reservation before it is reported done; every other replica must also hold it or be unable to take over without it (the write proof). 1 survives any one node, the cluster's failovers and forced failovers (CLUSTER FAILOVER FORCE) of a replica in step; set it to the shard's replicas to survive the forced failover of a replica held behind too, and have writes fail while any replica is down or behind")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address of the public HTTP API")
	fs.StringVar(&c.AdminListen, "admin-listen", c.AdminListen, "address of the admin listener (/metrics, /debug/pprof/, /livez, /readyz, /v1/spampede/)")
	fs.StringVar(&c.HealthListen, "health-listen", c.HealthListen, "if set, also serve /metrics, /livez and /readyz here, apart from the admin routes")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "file holding the token (at least 16 characters) that PUT /v1/spampede/rules and /debug/pprof/ require as 'Authorization: Bearer <token>'; without it they answer 401")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.DrainDelay, "on shutdown, report not-ready for this long before closing listeners")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests get to finish on shutdown")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "json or text")
}

// Finish applies flag-only settings; call it after parsing.
func (c *Config) Finish() error {
	if c.AdminTokenFile != "" {
		t, err := secret.ReadFile(c.AdminTokenFile)
		if err != nil {
			return fmt.Errorf("--admin-token-file: %w", err)
		}
		c.AdminToken = t
	}
	if c.redisFlags == nil {
		return nil
	}
	return c.redisFlags.Apply(&c.Redis)
}

// SecretFlags are the flags whose values are secrets: redacted from the
// arguments wherever they are shown.
func SecretFlags() []string { return []string{"redis-password"} }

// maxClockOffset bounds --clock-offset: a drill's clock that is off, not
// another date.
const maxClockOffset = time.Hour

// minAdminToken is the shortest admin token accepted: 16 random characters
// cannot be guessed over HTTP.
const minAdminToken = 16

// Validate reports every problem, from every part.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Redis.Validate(), c.Store.Validate(), c.Rules.Validate(), c.API.Validate(),
		c.Spampede.Validate(), c.Dispatch.Validate(), c.Booking.Validate(), c.Fleet.Validate())
	if c.Booking.ClaimHold > c.Fleet.LeaseTTL {
		errs = append(errs, fmt.Errorf("booking claim hold %s must not exceed the lease time %s: a crashed instance's claimed bookings would wait past the takeover of its partitions", c.Booking.ClaimHold, c.Fleet.LeaseTTL))
	}
	if c.BookingAcks < 0 || c.RulesPollEvery <= 0 {
		errs = append(errs, errors.New("booking acks must not be negative and the rules poll interval must be positive"))
	}
	if t := c.AdminToken; t != "" && len(t) < minAdminToken {
		errs = append(errs, fmt.Errorf("the admin token must be at least %d characters, got %d", minAdminToken, len(t)))
	}
	if c.Listen == "" || c.AdminListen == "" {
		errs = append(errs, errors.New("listen and admin-listen addresses are required"))
	}
	if c.DrainDelay < 0 || c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain delay must not be negative and shutdown timeout must be positive"))
	}
	if c.ClockOffset < -maxClockOffset || c.ClockOffset > maxClockOffset {
		errs = append(errs, fmt.Errorf("clock offset must be within ±%s, got %s", maxClockOffset, c.ClockOffset))
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
		"listen": c.Listen, "admin_listen": c.AdminListen, "health_listen": c.HealthListen, "admin_token_file": c.AdminTokenFile, "driver_stale_after": c.Rules.StaleAfter.String(),
		"geo_cell_bits": c.Store.GeoCellBits, "drain_delay": c.DrainDelay.String(),
	}
}
