package spike

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
)

// service is one Apollo instance running in this process.
type service struct {
	app      *app.App
	bookings *booking.Service
	drivers  app.DriversWithBookings
	stop     func()
}

// instances is the fleet of a run behind a round-robin load balancer:
// riders' and drivers' calls go to the live instances in turn.
type instances struct {
	cfg      Config
	c        *localcluster.Cluster
	mode     string
	slots    chan struct{} // the dispatch engine: one, shared by every instance
	attempts *attemptLog

	mu   sync.Mutex
	svcs []*service // nil while crashed
	next atomic.Uint64
}

func startInstances(ctx context.Context, cfg Config, c *localcluster.Cluster, mode string) (*instances, error) {
	in := &instances{cfg: cfg, c: c, mode: mode, slots: make(chan struct{}, cfg.AllocSlots), attempts: newAttemptLog(),
		svcs: make([]*service, cfg.Instances)}
	for k := range cfg.Instances {
		if err := in.start(ctx, k); err != nil {
			in.stop()
			return nil, err
		}
	}
	return in, nil
}

// start runs instance k (again, after a crash: a new process would have a
// new name, so it does here too).
func (in *instances) start(ctx context.Context, k int) error {
	svc, err := startService(ctx, in.cfg, in.c, in.mode, in.slots, in.attempts, fmt.Sprintf("apollo-%d-%d", k+1, time.Now().UnixNano()))
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.svcs[k] = svc
	in.mu.Unlock()
	return nil
}

// crash stops instance k as a SIGKILL would: no hand-back, no drain; the
// load balancer stops sending it calls. It returns the partitions it held.
func (in *instances) crash(k int) []int {
	in.mu.Lock()
	svc := in.svcs[k]
	in.svcs[k] = nil
	in.mu.Unlock()
	if svc == nil {
		return nil
	}
	var parts []int
	for _, l := range svc.app.Member().Owned() {
		parts = append(parts, l.Partition)
	}
	svc.app.Crash()
	svc.stop()
	return parts
}

// pick is the next live instance.
func (in *instances) pick() *service {
	in.mu.Lock()
	defer in.mu.Unlock()
	for range len(in.svcs) {
		if s := in.svcs[int(in.next.Add(1))%len(in.svcs)]; s != nil {
			return s
		}
	}
	return nil
}

func (in *instances) stop() {
	in.mu.Lock()
	svcs := in.svcs
	in.svcs = make([]*service, len(svcs))
	in.mu.Unlock()
	for _, s := range svcs {
		if s != nil {
			s.stop()
		}
	}
}

// gone reports whether svc crashed (or stopped) since it was picked.
func (in *instances) gone(svc *service) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return !slices.Contains(in.svcs, svc)
}

// Create, Get, Heartbeat and Apply are the load balancer. A booking call
// that failed because its instance died under it is sent once more, to a
// live one, as a rider's app does when its connection is reset: the
// request's idempotency key makes it the same booking if the first got
// through (a create without one is not retried).
func (in *instances) Create(ctx context.Context, req booking.Request) (booking.Booking, error) {
	svc := in.pick()
	b, err := svc.bookings.Create(ctx, req)
	if err != nil && req.IdempotencyKey != "" && in.gone(svc) {
		return in.pick().bookings.Create(ctx, req)
	}
	return b, err
}

func (in *instances) Get(ctx context.Context, id string) (booking.Booking, error) {
	svc := in.pick()
	b, err := svc.bookings.Get(ctx, id)
	if err != nil && in.gone(svc) {
		return in.pick().bookings.Get(ctx, id)
	}
	return b, err
}

func (in *instances) Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error) {
	return in.pick().drivers.Heartbeat(ctx, id, loc, now)
}

func (in *instances) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	return in.pick().drivers.Apply(ctx, id, tr, now)
}

// startService wires Apollo as apollo serve would, plus the drill's hooks,
// with the rules of the mode. In process rather than over HTTP: on a
// two-core machine the HTTP layer's CPU would come out of Redis's and the
// pipeline's share and blur what the drill measures; the pipeline and the
// driver API it drives are the same code the HTTP handlers call, and the
// HTTP layer has its own end-to-end tests.
func startService(ctx context.Context, cfg Config, c *localcluster.Cluster, mode string, slots chan struct{}, attempts *attemptLog, id string) (*service, error) {
	rules, err := json.Marshal(cfg.rules(mode))
	if err != nil {
		return nil, err
	}
	rulesFile := filepath.Join(c.Dir(), "spampede-rules.json")
	if err := os.WriteFile(rulesFile, rules, 0o600); err != nil {
		return nil, err
	}
	acfg := app.DefaultConfig()
	acfg.Redis.Addrs = c.Addrs()
	acfg.Listen, acfg.AdminListen, acfg.DrainDelay = "127.0.0.1:0", "127.0.0.1:0", 0
	acfg.SpampedeRulesFile, acfg.InstanceID = rulesFile, id
	acfg.Booking.AllocationTimeout, acfg.Booking.Workers, acfg.Booking.CountAt = cfg.AllocationTimeout, cfg.Workers, cfg.CountAt
	acfg.Spampede.CountRejectedEvery = cfg.CountRejectedEvery
	if cfg.Cluster.Replicas == 0 {
		acfg.BookingAcks = 0
	}
	log := slog.New(slog.DiscardHandler)
	a, err := app.New(ctx, acfg, log,
		app.WrapAdmitter(func(a booking.Admitter) booking.Admitter { return observed{a} }),
		app.WrapAllocator(func(a booking.Allocator) booking.Allocator {
			return attempts.wrap(&engine{Allocator: a, cost: cfg.AllocCost, slots: slots})
		}))
	if err != nil {
		return nil, err
	}
	if err := a.Listen(); err != nil {
		a.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- a.Serve(sctx) }()
	return &service{app: a, bookings: a.Bookings(), drivers: a.DriverAPI(), stop: sync.OnceFunc(func() { cancel(); <-done })}, nil
}

// attemptLog records when each booking's allocation was attempted, on
// any instance.
type attemptLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func newAttemptLog() *attemptLog { return &attemptLog{at: map[string][]time.Time{}} }

func (l *attemptLog) wrap(a booking.Allocator) booking.Allocator { return logged{a, l} }

// firstAfter is the first attempt on booking id at or after t.
func (l *attemptLog) firstAfter(id string, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.at[id] {
		if !at.Before(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

type logged struct {
	booking.Allocator
	l *attemptLog
}

func (g logged) Allocate(ctx context.Context, id, service string, p driver.Location, now time.Time) (string, time.Time, error) {
	g.l.mu.Lock()
	g.l.at[id] = append(g.l.at[id], time.Now())
	g.l.mu.Unlock()
	return g.Allocator.Allocate(ctx, id, service, p, now)
}
