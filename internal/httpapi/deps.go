package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// Drivers is what the API needs from driver storage. It is declared here,
// by its consumer; redisstore's store satisfies it, and tests use a fake.
//
// Errors are matched with errors.Is/As against the redisstore and driver
// sentinels (see errors.go); anything else is reported as internal.
type Drivers interface {
	Get(ctx context.Context, id string) (driver.Driver, error)
	BatchGet(ctx context.Context, ids []string) (redisstore.Batch, error)
	Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error)
	// Apply runs one transition atomically. An empty tr.BookingID means the
	// booking the driver currently holds.
	Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error)
	Nearby(ctx context.Context, q redisstore.NearbyQuery, now time.Time) (redisstore.Nearby, error)
}

// Deps are the collaborators of the public handler.
type Deps struct {
	Drivers Drivers      // required
	Rules   driver.Rules // decides the "available" field of driver responses
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Log receives the access log and unexpected errors; discarded when nil.
	Log *slog.Logger
	// Registerer receives the HTTP metrics; none are registered when nil.
	Registerer prometheus.Registerer
}

// withDefaults fills the optional dependencies and checks the required ones.
func (d Deps) withDefaults() (Deps, error) {
	if d.Drivers == nil {
		return d, errors.New("httpapi: Deps.Drivers is required")
	}
	if err := d.Rules.Validate(); err != nil {
		return d, errors.Join(errors.New("httpapi: Deps.Rules"), err)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return d, nil
}
