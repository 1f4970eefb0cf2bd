package redisstore

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// router is what the store needs from redisroute.
type router interface {
	Exec(ctx context.Context, cmds []redisroute.Cmd) redisroute.Results
}

// Config configures the driver store.
type Config struct {
	// GeoCellBits is the geohash precision of the geo index cells: 25 bits
	// is about 4.9 km × 4.9 km, so a nearby search touches a few cells.
	GeoCellBits uint
	// CASAttempts bounds read-modify-write retries when a driver changes
	// under a transition.
	CASAttempts int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{GeoCellBits: 25, CASAttempts: 5} }

// RegisterFlags registers the store's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.UintVar(&c.GeoCellBits, "geo-cell-bits", c.GeoCellBits, "geohash bits of the driver geo index cells (25 ≈ 4.9 km)")
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
	return errors.Join(errs...)
}

// Drivers stores drivers. It is safe for concurrent use.
type Drivers struct {
	r         router
	cfg       Config
	rules     driver.Rules
	cas       script
	heartbeat script
}

// NewDrivers returns a driver store on r.
func NewDrivers(r router, cfg Config, rules driver.Rules) (*Drivers, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Drivers{r: r, cfg: cfg, rules: rules, cas: newScript(casScript), heartbeat: newScript(heartbeatScript)}, nil
}

// storeErr classifies a routing error: a Redis reply error is a bug or bad
// data (returned as is); anything else means Redis could not answer.
func storeErr(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) || errors.Is(err, redisroute.ErrInvalidCommand) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
