package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// Drivers is what the fleet needs from the driver service.
type Drivers interface {
	Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error)
	Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error)
}

// FleetConfig shapes the simulated fleet.
type FleetConfig struct {
	Size              int           // drivers
	HeartbeatInterval time.Duration // each driver reports this often
	SpeedMPS          float64       // how far a driver moves per second
	Seed              uint64
	City              City
	// Avoid is a circle where no driver starts (drivers scarce where a
	// storm will hit); zero radius: none.
	AvoidCenter  driver.Location
	AvoidRadiusM float64
	// Behaviour, if set, makes drivers answer reservations and drive trips.
	Behaviour *Behaviour
}

// DefaultFleetConfig is a few thousand drivers in Singapore.
func DefaultFleetConfig() FleetConfig {
	return FleetConfig{Size: 3000, HeartbeatInterval: 5 * time.Second, SpeedMPS: 8, Seed: 1, City: Singapore()}
}

// Validate reports a fleet that cannot run.
func (c FleetConfig) Validate() error {
	var errs []error
	if c.Size < 1 || c.Size > 1_000_000 {
		errs = append(errs, fmt.Errorf("fleet size must be within [1, 1000000], got %d", c.Size))
	}
	if c.HeartbeatInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("heartbeat interval must be at least 100ms, got %s", c.HeartbeatInterval))
	}
	if c.SpeedMPS < 0 {
		errs = append(errs, errors.New("speed must not be negative"))
	}
	if c.Behaviour != nil {
		errs = append(errs, c.Behaviour.Validate())
	}
	return errors.Join(append(errs, c.City.Validate())...)
}

// Fleet is a set of simulated drivers. Seed brings them on line; Run moves
// them and sends their heartbeats until its context ends.
type Fleet struct {
	cfg   FleetConfig
	api   Drivers
	rng   *rand.Rand
	locs  []driver.Location
	state []driverState // used with a Behaviour
}

// NewFleet places cfg.Size drivers at random points of the city.
func NewFleet(cfg FleetConfig, api Drivers) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, api: api, rng: rand.New(rand.NewPCG(cfg.Seed, 7)), state: make([]driverState, cfg.Size)}
	for len(f.locs) < cfg.Size {
		l := cfg.City.random(f.rng)
		if cfg.AvoidRadiusM > 0 && DistanceM(cfg.AvoidCenter, l) <= cfg.AvoidRadiusM {
			continue
		}
		f.locs = append(f.locs, l)
	}
	return f, nil
}

// ID names the i-th driver.
func ID(i int) string { return fmt.Sprintf("drv-%06d", i) }

func (f *Fleet) services(i int) []string {
	if i%4 == 3 {
		return []string{"bike"}
	}
	return []string{"car"}
}

// Seed sends every driver's first heartbeat and brings it on line.
// progress, if not nil, is called with the number done so far.
func (f *Fleet) Seed(ctx context.Context, now func() time.Time, progress func(done int)) error {
	for i := range f.locs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := f.api.Heartbeat(ctx, ID(i), f.locs[i], now()); err != nil {
			return fmt.Errorf("seed %s: %w", ID(i), err)
		}
		_, err := f.api.Apply(ctx, ID(i), driver.Transition{Event: driver.EventGoOnline, Services: f.services(i)}, now())
		if err != nil && !errors.Is(err, driver.ErrIllegalTransition) {
			return fmt.Errorf("seed %s: %w", ID(i), err)
		}
		if progress != nil && (i+1)%500 == 0 {
			progress(i + 1)
		}
	}
	return nil
}

// Run moves the drivers and sends heartbeats, each driver once per
// HeartbeatInterval, spread evenly over the interval. Errors are counted
// and reported through onErr (if not nil), never fatal: Redis may be
// failing on purpose.
func (f *Fleet) Run(ctx context.Context, now func() time.Time, onErr func(error)) {
	const ticks = 10
	tick := time.NewTicker(f.cfg.HeartbeatInterval / ticks)
	defer tick.Stop()
	step := f.cfg.SpeedMPS * f.cfg.HeartbeatInterval.Seconds() / 111_000 // degrees per heartbeat, roughly
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i := n % ticks; i < len(f.locs); i += ticks {
			l := f.locs[i]
			l.Lat += (f.rng.Float64()*2 - 1) * step
			l.Lng += (f.rng.Float64()*2 - 1) * step
			f.locs[i] = f.cfg.City.clamp(l)
			d, err := f.api.Heartbeat(ctx, ID(i), f.locs[i], now())
			if err == nil && f.cfg.Behaviour != nil {
				err = f.behave(ctx, i, d, now)
			}
			if err != nil && onErr != nil && ctx.Err() == nil {
				onErr(err)
			}
		}
	}
}
