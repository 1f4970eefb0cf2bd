package spike

import (
	"context"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// probeKey carries a *spampede.Outcome through Create, so the drill learns
// what Spampede decided for each of its bookings (shadow rejections and
// fail-opens are admissions, invisible in Create's result).
type probeKey struct{}

func withProbe(ctx context.Context, o *spampede.Outcome) context.Context {
	return context.WithValue(ctx, probeKey{}, o)
}

// observed is the Spampede filter with each decision copied to the probe.
type observed struct{ booking.Admitter }

func (o observed) Admit(ctx context.Context, service string, lat, lng float64, now time.Time) spampede.Decision {
	d := o.Admitter.Admit(ctx, service, lat, lng, now)
	if p, ok := ctx.Value(probeKey{}).(*spampede.Outcome); ok {
		*p = d.Outcome
	}
	return d
}

// engine gives allocation the cost of a real dispatch engine: ETA and
// route calls for the candidates, here a wait while holding one of a fixed
// number of slots. Every admitted booking pays it on each attempt, and the
// booking workers retry unallocated bookings every scan until their
// deadline, so a flood of bookings no driver can take fills the slots and
// every rider in the city queues behind it. That shared capacity is what
// Spampede protects.
type engine struct {
	booking.Allocator
	cost  time.Duration
	slots chan struct{}
}

func (e *engine) Allocate(ctx context.Context, bookingID, service string, pickup driver.Location, now time.Time) (string, time.Time, error) {
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return "", time.Time{}, ctx.Err()
	}
	t := time.NewTimer(e.cost)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		<-e.slots
		return "", time.Time{}, ctx.Err()
	}
	<-e.slots
	return e.Allocator.Allocate(ctx, bookingID, service, pickup, now)
}
