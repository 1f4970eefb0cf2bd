package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// ErrNoDriver: no available driver could be reserved now.
var ErrNoDriver = errors.New("no available driver near the pickup")

// Candidate is an available driver near a pickup.
type Candidate struct {
	DriverID  string
	DistanceM float64
}

// Finder lists available drivers of a service near a point, nearest first.
// When it could not read part of the area or of the drivers' records, it
// returns the candidates it found with an error saying so: the drivers it
// could not see may be free.
type Finder interface {
	Find(ctx context.Context, service string, at driver.Location, radiusM float64, limit int, now time.Time) ([]Candidate, error)
}

// Reserver reserves a driver for a booking until a time, atomically: it
// fails with a driver.ErrIllegalTransition (or a conflict) if the driver is
// no longer available.
type Reserver interface {
	Reserve(ctx context.Context, driverID, bookingID string, until, now time.Time) error
}

// Config shapes a search.
type Config struct {
	RadiusM        float64       // how far from the pickup
	Candidates     int           // how many drivers to try per attempt
	ReservationTTL time.Duration // how long a driver has to accept
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{RadiusM: 3000, Candidates: 10, ReservationTTL: 15 * time.Second}
}

// Validate reports an unusable config.
func (c Config) Validate() error {
	if c.RadiusM <= 0 || c.Candidates < 1 || c.ReservationTTL <= 0 {
		return errors.New("dispatch: radius, candidates and reservation TTL must be positive")
	}
	return nil
}

// Allocator finds and reserves drivers.
type Allocator struct {
	cfg     Config
	find    Finder
	reserve Reserver
}

// New returns an allocator.
func New(cfg Config, f Finder, r Reserver) (*Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Allocator{cfg: cfg, find: f, reserve: r}, nil
}

// Allocate reserves the nearest available driver for the booking. A driver
// taken by a concurrent booking is skipped; a storage failure is returned.
// A search that could not see everything still offers the drivers it found,
// but when none of them can be reserved the answer is its failure, not
// ErrNoDriver: a booking counted as finding no driver (Spampede) must not
// be one that met a shard down while drivers stood by.
func (a *Allocator) Allocate(ctx context.Context, bookingID, service string, pickup driver.Location, now time.Time) (string, time.Time, error) {
	cands, searchErr := a.find.Find(ctx, service, pickup, a.cfg.RadiusM, a.cfg.Candidates, now)
	if searchErr != nil {
		searchErr = fmt.Errorf("find drivers: %w", searchErr)
	}
	until := now.Add(a.cfg.ReservationTTL)
	for _, c := range cands {
		err := a.reserve.Reserve(ctx, c.DriverID, bookingID, until, now)
		switch {
		case err == nil:
			return c.DriverID, until, nil
		case lostRace(err):
			continue
		default:
			return "", time.Time{}, fmt.Errorf("reserve %s: %w", c.DriverID, err)
		}
	}
	if searchErr != nil {
		return "", time.Time{}, searchErr
	}
	return "", time.Time{}, ErrNoDriver
}

// ErrTaken is what a Reserver returns when the driver changed under it.
var ErrTaken = errors.New("driver no longer available")

func lostRace(err error) bool {
	return errors.Is(err, driver.ErrIllegalTransition) || errors.Is(err, ErrTaken)
}
