package httpapi

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"time"
)

// Config bounds what one request may ask for. Start from DefaultConfig.
type Config struct {
	// MaxBodyBytes caps a request body; larger bodies get 413. It bounds the
	// memory and CPU a single request can make the decoder spend.
	MaxBodyBytes int64
	// MaxBatch caps the ids of one batch-get (before duplicates are folded).
	MaxBatch int
	// MaxRadiusM caps a nearby search radius in metres; DefaultRadiusM is
	// used when the query gives none.
	MaxRadiusM, DefaultRadiusM float64
	// MaxLimit caps the drivers one nearby search returns; DefaultLimit is
	// used when the query gives none.
	MaxLimit, DefaultLimit int
	// MaxWait caps the long poll of GET /v1/bookings/{id}?wait=. Keep it
	// below the server's write timeout, or long polls are cut off.
	MaxWait time.Duration
	// RequestTimeout is the deadline of a write request (driver location
	// and events, booking create and cancel) that brings no earlier
	// Apollo-Deadline: its changes are made by then or not at all.
	RequestTimeout time.Duration
}

// DefaultConfig returns the configuration used unless told otherwise.
func DefaultConfig() Config {
	return Config{
		MaxBodyBytes:   1 << 20,
		MaxBatch:       500,
		MaxRadiusM:     20_000,
		DefaultRadiusM: 2_000,
		MaxLimit:       100,
		DefaultLimit:   20,
		MaxWait:        30 * time.Second,
		RequestTimeout: 5 * time.Second,
	}
}

// RegisterFlags registers the config's flags on fs, with c's current values
// as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.MaxBodyBytes, "api-max-body-bytes", c.MaxBodyBytes, "largest accepted request body, in bytes")
	fs.IntVar(&c.MaxBatch, "api-max-batch", c.MaxBatch, "most driver ids in one batch-get")
	fs.Float64Var(&c.MaxRadiusM, "api-max-radius-m", c.MaxRadiusM, "largest nearby search radius, in metres")
	fs.Float64Var(&c.DefaultRadiusM, "api-default-radius-m", c.DefaultRadiusM, "nearby search radius when the query gives none, in metres")
	fs.IntVar(&c.MaxLimit, "api-max-limit", c.MaxLimit, "most drivers one nearby search returns")
	fs.IntVar(&c.DefaultLimit, "api-default-limit", c.DefaultLimit, "drivers a nearby search returns when the query gives no limit")
	fs.DurationVar(&c.RequestTimeout, "api-request-timeout", c.RequestTimeout, "deadline of a write request without an earlier Apollo-Deadline header: its changes are made by then or not at all")
	fs.DurationVar(&c.MaxWait, "api-max-wait", c.MaxWait, "longest long poll of a booking (?wait=); keep it below the server's write timeout")
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("api-max-body-bytes must be positive"))
	}
	if c.MaxBatch <= 0 {
		errs = append(errs, errors.New("api-max-batch must be positive"))
	}
	if !(c.MaxRadiusM > 0) || math.IsInf(c.MaxRadiusM, 0) {
		errs = append(errs, errors.New("api-max-radius-m must be a positive finite number"))
	}
	if !(c.DefaultRadiusM > 0) || c.DefaultRadiusM > c.MaxRadiusM {
		errs = append(errs, fmt.Errorf("api-default-radius-m must be within (0, %g]", c.MaxRadiusM))
	}
	if c.MaxLimit <= 0 {
		errs = append(errs, errors.New("api-max-limit must be positive"))
	}
	if c.DefaultLimit <= 0 || c.DefaultLimit > c.MaxLimit {
		errs = append(errs, fmt.Errorf("api-default-limit must be within [1, %d]", c.MaxLimit))
	}
	if c.MaxWait <= 0 {
		errs = append(errs, errors.New("api-max-wait must be positive"))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("api-request-timeout must be positive"))
	}
	return errors.Join(errs...)
}
