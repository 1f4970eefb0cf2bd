package console

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Router is the router's view of the cluster.
type Router interface {
	Status() redisroute.Status
}

// Fleet is what the console reads of the fleet in Redis, and how an
// instance tells the others what it runs.
type Fleet interface {
	View(ctx context.Context) ([]redisstore.PartitionView, error)
	Members(ctx context.Context, now time.Time) ([]string, error)
	Announce(ctx context.Context, id string, about []byte, ttl time.Duration) error
	Announcements(ctx context.Context, ids []string) (map[string][]byte, error)
}

// Reaches lists the instances' latest reach reports (fleet.Reach): an
// instance that stands aside from the fleet, behind the others, is no
// member, yet still reports its reach.
type Reaches interface {
	Reaches(ctx context.Context, now time.Time) ([]fleet.ReachReport, error)
}

// Spampede is the filter in force on this instance.
type Spampede interface {
	Rules() spampede.RuleSet
	TrippedCells(now time.Time, top int) []spampede.CellState
}

// Deps are the console's collaborators; Faults is optional.
type Deps struct {
	Instance string // this instance's fleet id
	Router   Router
	Fleet    Fleet
	Spampede Spampede
	Sampler  *Sampler
	// Faults, under apollo dev only, adds the fault panel.
	Faults Faults
	Now    func() time.Time
	Log    *slog.Logger
	// AnnounceEvery is how often the instance announces its rules version
	// and readiness (for TTL three times as long); 2 s when zero.
	AnnounceEvery time.Duration
	// Readiness is this instance's /readyz verdict (nil: ready), announced
	// with the rules version so that any instance's console shows which
	// of the fleet a load balancer would take out, and why. Optional.
	Readiness func(context.Context) error
	// Reaches, if set, adds to the fleet's members the instances that
	// report their reach without being members: those standing aside.
	Reaches Reaches
}

// Console serves the page and its data.
type Console struct {
	d   Deps
	now func() time.Time

	mu    sync.Mutex
	fleet fleetRead // under mu
	// own is what this instance last announced: apart from mu, which a
	// page's fleet read holds for up to a second.
	own atomic.Pointer[announcement]
}

// New returns the console; Run starts its background work.
func New(d Deps) (*Console, error) {
	if d.Router == nil || d.Fleet == nil || d.Spampede == nil || d.Sampler == nil {
		return nil, errors.New("console: router, fleet, spampede and sampler are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.AnnounceEvery <= 0 {
		d.AnnounceEvery = 2 * time.Second
	}
	return &Console{d: d, now: d.Now}, nil
}

// maxReason bounds a not-ready reason as announced: one line a shard can
// make kilobytes on a large cluster, written every 2 s by every instance.
const maxReason = 300

// reason is err's first line, at most maxReason bytes (whole runes).
func reason(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Run samples the metrics and announces this instance's rules version and
// readiness until stop is closed; the caller owns the goroutine.
func (c *Console) Run(stop <-chan struct{}) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.d.Sampler.Run(stop)
	}()
	defer func() { <-done }()
	tick := time.NewTicker(c.d.AnnounceEvery)
	defer tick.Stop()
	for {
		c.announce()
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// announce tells the fleet which rules version is in force here, and
// whether this instance is ready.
func (c *Console) announce() {
	ctx, cancel := context.WithTimeout(context.Background(), c.d.AnnounceEvery)
	defer cancel()
	a := announcement{RulesVersion: c.d.Spampede.Rules().Version}
	if c.d.Readiness != nil {
		err := c.d.Readiness(ctx)
		ready := err == nil
		a.Ready = &ready
		if err != nil {
			a.NotReady = reason(err)
		}
	}
	c.own.Store(&a)
	about, _ := json.Marshal(a)
	if err := c.d.Fleet.Announce(ctx, c.d.Instance, about, 3*c.d.AnnounceEvery); err != nil {
		c.d.Log.Debug("console: announcing the rules version and readiness", "err", err)
	}
}
