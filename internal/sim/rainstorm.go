package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// Booker is where a rainstorm's riders book.
type Booker interface {
	Create(ctx context.Context, req booking.Request) (booking.Booking, error)
}

// RainstormConfig is a rainstorm: PerSecond riders booking within RadiusM
// of Center, more than the drivers there can take.
type RainstormConfig struct {
	Center    driver.Location
	RadiusM   float64
	PerSecond float64
	Service   string
	Seed      uint64
}

// DefaultRainstorm is rain over Raffles Place at 30 bookings a second.
func DefaultRainstorm() RainstormConfig {
	return RainstormConfig{Center: driver.Location{Lat: 1.2840, Lng: 103.8514}, RadiusM: 400, PerSecond: 30, Service: "car", Seed: 7}
}

// Validate reports a rainstorm that cannot be made.
func (c RainstormConfig) Validate() error {
	if c.PerSecond <= 0 || c.PerSecond > 1000 {
		return fmt.Errorf("rainstorm: rate must be within (0, 1000] bookings/s, got %g", c.PerSecond)
	}
	if c.RadiusM < 50 || c.RadiusM > 20_000 {
		return fmt.Errorf("rainstorm: radius must be within [50, 20000] m, got %g", c.RadiusM)
	}
	if c.Service == "" {
		return errors.New("rainstorm: a service is required")
	}
	return driver.ValidateLocation(c.Center.Lat, c.Center.Lng)
}

// RainstormCounts is what a rainstorm's bookings got.
type RainstormCounts struct {
	Sent, Created, Rejected, Failed int64
}

// Rainstorm books rides over one area while it is on. Start and Stop
// may be called any number of times; Stop waits for its goroutine.
type Rainstorm struct {
	cfg RainstormConfig
	b   Booker

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	showers uint64 // under mu: each shower draws from its own generator
	n       atomic.Int64

	sent, created, rejected, failed atomic.Int64
}

// NewRainstorm returns a rainstorm over cfg's area, booking through b.
func NewRainstorm(cfg RainstormConfig, b Booker) (*Rainstorm, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Rainstorm{cfg: cfg, b: b}, nil
}

// Config is the rainstorm's area and rate.
func (r *Rainstorm) Config() RainstormConfig { return r.cfg }

// On reports whether it is raining.
func (r *Rainstorm) On() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancel != nil
}

// Counts is what its bookings got so far, over every shower.
func (r *Rainstorm) Counts() RainstormCounts {
	return RainstormCounts{Sent: r.sent.Load(), Created: r.created.Load(), Rejected: r.rejected.Load(), Failed: r.failed.Load()}
}

// Start makes it rain, if it does not already.
func (r *Rainstorm) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	r.showers++
	go r.rain(ctx, r.done, rand.New(rand.NewPCG(r.cfg.Seed, r.showers)))
}

// Stop ends the rain and waits for the bookings in flight.
func (r *Rainstorm) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// rain books one ride every 1/PerSecond, each in its own goroutine so that
// a slow booking does not slow the rain, until ctx ends.
func (r *Rainstorm) rain(ctx context.Context, done chan struct{}, rng *rand.Rand) {
	defer close(done)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Duration(float64(time.Second) / r.cfg.PerSecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req := r.next(rng)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.book(ctx, req)
		}()
	}
}

// next is the next rider's request: a pickup uniformly within the circle.
func (r *Rainstorm) next(rng *rand.Rand) booking.Request {
	i := r.n.Add(1)
	return booking.Request{
		RiderID: fmt.Sprintf("rain-rider-%d", i), Service: r.cfg.Service,
		Pickup:  inCircle(rng, r.cfg.Center, r.cfg.RadiusM),
		Dropoff: inCircle(rng, r.cfg.Center, 5*r.cfg.RadiusM),
		// Unique per run of the process and per booking.
		IdempotencyKey: fmt.Sprintf("rain-%d-%d", time.Now().UnixNano(), i),
	}
}

func (r *Rainstorm) book(ctx context.Context, req booking.Request) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.sent.Add(1)
	_, err := r.b.Create(ctx, req)
	var high *booking.HighDemandError
	switch {
	case err == nil:
		r.created.Add(1)
	case errors.As(err, &high):
		r.rejected.Add(1)
	default:
		r.failed.Add(1)
	}
}
