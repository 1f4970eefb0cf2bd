package redisstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// router is what the store needs from redisroute.
type router interface {
	Exec(ctx context.Context, cmds []redisroute.Cmd) redisroute.Results
	// ClockOffset is how far ahead of this process's clock the clock of
	// key's primary may be, at the earliest (see lateGuard).
	ClockOffset(key string) time.Duration
	// SameShard reports whether one shard serves keys a and b now.
	SameShard(a, b string) bool
}

// Config configures the driver store.
type Config struct {
	// GeoCellBits is the geohash precision of the geo index cells: 25 bits
	// is about 4.9 km × 4.9 km, so a nearby search touches a few cells.
	GeoCellBits uint
	// CASAttempts bounds read-modify-write retries when a driver changes
	// under a transition.
	CASAttempts int
	// DriverTTL is how long a driver's hash outlives its last heartbeat, so
	// drivers who went silent for good do not pile up. It must be many
	// times driver.Rules.StaleAfter (see minTTLFactor): a driver in a
	// tunnel misses heartbeats for minutes, and losing the hash logs them
	// off. Busy drivers heartbeat too, so a reservation or trip in progress
	// keeps its driver; a driver whose app died with a reservation loses
	// it with the hash, and Release finds no driver to release.
	DriverTTL time.Duration
	// SweepWait bounds how long a nearby search waits, after its answer is
	// built, for the best-effort write that sweeps the stale and missing
	// drivers it met out of the index; 0 turns that sweep off (heartbeats
	// still sweep). It keeps a slow primary off the read path's latency.
	SweepWait time.Duration
	// Acks is how many replicas must acknowledge a driver transition
	// (WAIT) before it counts as done: a reservation a failover can undo
	// would let a second booking reserve the driver. 0 on a cluster
	// without replicas. Set with the booking acks (--booking-acks).
	Acks int
}

// minTTLFactor is how many times StaleAfter a driver hash must outlive its
// last heartbeat at least.
const minTTLFactor = 10

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{GeoCellBits: 25, CASAttempts: 5, DriverTTL: time.Hour, SweepWait: 50 * time.Millisecond}
}

// RegisterFlags registers the store's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.UintVar(&c.GeoCellBits, "geo-cell-bits", c.GeoCellBits, "geohash bits of the driver geo index cells (25 ≈ 4.9 km)")
	fs.DurationVar(&c.DriverTTL, "driver-ttl", c.DriverTTL,
		"how long a driver's record outlives its last heartbeat (at least 10 × driver.stale-after)")
	fs.DurationVar(&c.SweepWait, "nearby-sweep-wait", c.SweepWait,
		"how long a nearby search waits for its best-effort cleanup of dead drivers from the index (0 = no cleanup by searches)")
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.GeoCellBits < 10 || c.GeoCellBits > 40 {
		errs = append(errs, fmt.Errorf("geo cell bits must be within [10, 40], got %d", c.GeoCellBits))
	}
	if c.CASAttempts < 1 {
		errs = append(errs, fmt.Errorf("cas attempts must be at least 1, got %d", c.CASAttempts))
	}
	if c.DriverTTL < time.Second {
		errs = append(errs, fmt.Errorf("driver ttl must be at least 1s, got %v", c.DriverTTL))
	}
	if c.Acks < 0 {
		errs = append(errs, fmt.Errorf("driver transition acks must not be negative, got %d", c.Acks))
	}
	if c.SweepWait < 0 {
		errs = append(errs, fmt.Errorf("nearby sweep wait must not be negative, got %v", c.SweepWait))
	}
	return errors.Join(errs...)
}

// Drivers stores drivers. It is safe for concurrent use.
type Drivers struct {
	r         router
	cfg       Config
	rules     driver.Rules
	cas       script
	heartbeat script
	index     script
	sweep     script
	claim     script
	zremIf    script
	reserved  []string // the reserved-drivers index's partitions (reserved.go)
}

// NewDrivers returns a driver store on r.
func NewDrivers(r router, cfg Config, rules driver.Rules) (*Drivers, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DriverTTL < minTTLFactor*rules.StaleAfter {
		return nil, fmt.Errorf("driver ttl %v must be at least %d × driver.stale-after (%v)", cfg.DriverTTL, minTTLFactor, rules.StaleAfter)
	}
	return &Drivers{r: r, cfg: cfg, rules: rules, cas: newGuardedScript(casScript), heartbeat: newGuardedScript(heartbeatScript),
		index: newScript(indexScript), sweep: newScript(sweepScript), claim: newScript(claimScript), zremIf: newScript(zremIfScoreScript),
		reserved: reservedKeys()}, nil
}

// storeErr classifies a routing error: a reply error to the command is a
// bug or bad data (returned as is); anything else, a reply refusing it
// that the router gave up on (CLUSTERDOWN, LOADING, TRYAGAIN) among them,
// means Redis could not answer. nil stays nil.
func storeErr(err error) error {
	if err == nil {
		return nil
	}
	var rerr redis.Error
	reply := errors.As(err, &rerr)
	switch {
	case reply && isLate(rerr):
		return fmt.Errorf("%w: %w", ErrUnavailable, ErrLate)
	case redisroute.IsOutOfMemory(err):
		// Raised before the command, or before a script's first write,
		// ran: Redis lets a script that has written go on, so a script is
		// refused whole or not at all.
		return fmt.Errorf("%w: %w: %w", ErrUnavailable, ErrFull, err)
	case redisroute.IsCannotPersist(err):
		// Likewise refused before anything ran: while Redis cannot
		// persist, every write is.
		return fmt.Errorf("%w: %w: %w", ErrUnavailable, ErrCannotPersist, err)
	case reply && !errors.Is(err, redisroute.ErrUnavailable), errors.Is(err, redisroute.ErrInvalidCommand):
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
