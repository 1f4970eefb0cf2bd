package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/console"
	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// App is a wired Apollo service.
type App struct {
	cfg      Config
	log      *slog.Logger
	reg      *prometheus.Registry
	router   *redisroute.Router
	drivers  *redisstore.Drivers
	filter   *spampede.Filter
	rules    spampedeRules
	bookings *booking.Service
	member   *fleet.Member
	reach    *fleet.Reach
	reaches  *redisstore.Reaches // the instances' reach reports, read by reach and the console
	fleet    *redisstore.Fleet
	console  *console.Console
	stopBg   chan struct{}
	bg       sync.WaitGroup
	api      *http.Server
	admin    *http.Server
	health   *http.Server // nil unless HealthListen is set
	apiLn    net.Listener
	adminLn  net.Listener
	healthLn net.Listener
	draining atomic.Bool
	crashed  atomic.Bool // Crash was called: nothing is handed back
	// stopping is cancelled when the API server begins its shutdown: it
	// ends the long polls, which would otherwise hold the shutdown up to 30 s.
	stopping context.Context
	stopAPI  context.CancelFunc
}

// New connects to Redis and wires the service; nothing listens until Run.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	if off := cfg.ClockOffset; off != 0 && cfg.Redis.Wall == nil {
		log.Warn("running with a clock that is off, for a drill (--clock-offset)", "offset", off)
		cfg.Redis.Wall = func() time.Time { return time.Now().Add(off) }
	}
	a := &App{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	a.stopping, a.stopAPI = context.WithCancel(context.Background())
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	o := collect(opts)
	if o.logOutput != nil {
		a.reg.MustRegister(o.logOutput)
	}
	var err error
	cfg.Redis.Rights = redisstore.Rights() // watched while Apollo runs
	if a.router, err = redisroute.New(ctx, cfg.Redis, a.reg, log.With("component", "redisroute")); err != nil {
		return nil, err
	}
	if err := refuseWithoutRights(ctx, a.router, cmp.Or(cfg.Redis.Username, "default"), log); err != nil {
		a.router.Close()
		return nil, err
	}
	if err := refuseEvicting(ctx, a.router, log); err != nil {
		a.router.Close()
		return nil, err
	}
	cfg.Store.Acks = cfg.BookingAcks // a reservation counts as a booking write does
	if a.drivers, err = redisstore.NewDrivers(a.router, cfg.Store, cfg.Rules); err != nil {
		a.router.Close()
		return nil, err
	}
	if err := a.wireBookings(ctx, cfg, log, o); err != nil {
		a.router.Close()
		return nil, err
	}
	handler, err := httpapi.New(cfg.API, httpapi.Deps{Drivers: a.DriverAPI(), Bookings: a.bookings,
		Rules: cfg.Rules, Now: a.router.Now, ClockAhead: a.router.NowAhead, Log: log.With("component", "http"), Registerer: a.reg, Stopping: a.stopping})
	if err != nil {
		a.router.Close()
		return nil, err
	}
	// What /readyz answers, for alerts: a scrape runs the same check. It
	// has a registry of its own, served with the others on /metrics, so
	// that the console's sampler (once a second) does not probe Redis too.
	readyReg := prometheus.NewRegistry()
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apollo_ready",
		Help: "1 while /readyz would answer 200: not draining, some Redis shard answers, and no other instance reaches every primary this one reaches and more."}, func() float64 {
		if a.readiness(context.Background()) != nil {
			return 0
		}
		return 1
	})
	if err := readyReg.Register(ready); err != nil {
		a.router.Close()
		return nil, err
	}
	if a.console, err = console.New(console.Deps{Instance: a.member.ID(), Router: a.router, Fleet: a.fleet,
		Spampede: a.filter, Sampler: console.NewSampler(a.reg, time.Second, 180, time.Now, log), Faults: o.faults,
		Now: a.router.Now, Log: log.With("component", "console"), Readiness: a.readiness, Reaches: a.reaches}); err != nil {
		a.router.Close()
		return nil, err
	}
	deps := httpapi.AdminDeps{Gatherer: prometheus.Gatherers{a.reg, readyReg}, Ready: a.readiness, Draining: a.draining.Load, Log: log,
		Spampede: a.rules, Now: a.router.Now, Token: cfg.AdminToken, Cmdline: cfg.Cmdline, Console: a.console.Handler()}
	errLog := httpServerLog(log)
	a.api = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 40 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: errLog}
	a.admin = &http.Server{Handler: httpapi.NewAdmin(deps), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, ErrorLog: errLog}
	if cfg.HealthListen != "" {
		a.health = &http.Server{Handler: httpapi.NewHealth(deps), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, ErrorLog: errLog}
	}
	return a, nil
}

// wireBookings builds the booking pipeline: Spampede (rules shared through
// Redis), dispatch over the driver store, bookings in Redis.
func (a *App) wireBookings(ctx context.Context, cfg Config, log *slog.Logger, o options) error {
	seed, err := seedRules(cfg.SpampedeRulesFile)
	if err != nil {
		return err
	}
	m, err := newSpampedeMetrics(a.reg)
	if err != nil {
		return err
	}
	counters := redisstore.NewSpampedeCounters(a.router)
	if a.filter, err = spampede.New(cfg.Spampede, counters, seed, m); err != nil {
		return err
	}
	a.rules = spampedeRules{filter: a.filter, counters: counters, log: log.With("component", "spampede")}
	if err := a.rules.load(ctx, seed); err != nil {
		return err
	}
	alloc, err := dispatch.New(cfg.Dispatch, finder{a.drivers}, reserver{a.drivers})
	if err != nil {
		return err
	}
	ps, err := redisstore.NewPartitions(cfg.Fleet.Partitions)
	if err != nil {
		return err
	}
	id := cfg.InstanceID
	if id == "" {
		id = instanceID()
	}
	fs := redisstore.NewFleet(a.router, ps)
	a.fleet = fs
	if err := fs.Agree(ctx); err != nil {
		return err
	}
	fm, err := newFleetMetrics(a.reg, cfg.Fleet.Partitions)
	if err != nil {
		return err
	}
	// Leases on this process's monotonic clock (durations only), the
	// list of members on the cluster's time.
	clock := fleet.Clock{Local: time.Now, Shared: a.router.Now}
	if a.member, err = fleet.NewMember(cfg.Fleet, id, fs, clock, fm, log.With("component", "fleet")); err != nil {
		return err
	}
	a.reaches = redisstore.NewReaches(a.router)
	a.reach = fleet.NewReach(id, a.reaches, a.router, a.router.Now, cfg.Fleet.RenewEvery, log.With("component", "fleet"))
	// An instance behind the others (a primary they reach and it does
	// not) takes no requests (readiness) and does no share of the
	// background work: the others reach all of it.
	a.member.StandAsideWhile(a.reach.Behind)
	if err := a.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apollo_redis_primary_slots_reached",
		Help: "Slots whose primary answered this instance's last reach probe (every --lease-renew-every): an instance is not ready while another reaches every primary it reaches and more."},
		func() float64 { return float64(a.reach.Slots()) })); err != nil {
		return err
	}
	store := redisstore.NewBookings(a.router, cfg.BookingAcks, ps)
	if n, err := store.AdoptLegacyIndex(ctx); err != nil {
		log.Warn("move the open bookings of the unpartitioned index into the partitions; the next start tries again", "moved", n, "err", err)
	} else if n > 0 {
		log.Info("moved the open bookings of the unpartitioned index into the partitions", "moved", n)
	}
	bm, err := newBookingMetrics(a.reg)
	if err != nil {
		return err
	}
	a.bookings, err = booking.NewService(cfg.Booking, o.admitter(a.filter), o.allocator(alloc), store,
		reserver{a.drivers}, a.drivers, a.member, a.router.Now, log.With("component", "booking"), bm)
	return err
}

// instanceID names a process uniquely: host, PID and a random suffix (a
// PID is reused after a restart in a fresh container).
func instanceID() string {
	host, _ := os.Hostname()
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}

// readyWithin bounds /readyz's read of the shards.
const readyWithin = 500 * time.Millisecond

// readiness is what /readyz answers: not ready while draining, else
// ready's verdict. The apollo_ready gauge reads it, and the console
// announces it to the fleet, so that the three cannot differ. (/readyz
// asks Draining first all the same, which costs no Redis read.)
func (a *App) readiness(ctx context.Context) error {
	if a.draining.Load() {
		return errDraining
	}
	return a.ready(ctx)
}

// errDraining: shutdown has begun, and the balancer should send no more.
var errDraining = errors.New("draining")

// ready is /readyz: this instance can serve, which is that some shard
// serves a real keyed read within half a second, and that no other
// instance reaches primaries this one does not. A shard that answers none
// of the instances fails its part of the key space on every instance alike
// (with 503s, and the router's alerts); taking every instance out of the
// load balancer for it would fail the other shards' keys too. So only what
// is this instance's own makes it unready: its network or its credentials
// (no shard answers), or its path to a primary the others reach
// (fleet.Reach), and the balancer sends its traffic to the others.
//
// A cluster that is down answers CLUSTERDOWN to every key: for every
// client, from a primary's failure until a replica takes over; or for
// this instance alone, when all it reaches is a minority of the nodes,
// cut off from the rest. The first leaves it ready; the second is told
// by its own probe of the primaries, which reached no more than half of
// them (fleet.Reach.MostPrimaries).
func (a *App) ready(ctx context.Context) error {
	// Half a second: a balancer's check commonly times out at one, and a
	// read answered CLUSTERDOWN is retried, backing off, until the
	// deadline is near.
	ctx, cancel := context.WithTimeout(ctx, readyWithin)
	defer cancel()
	served, stated, err := a.router.ProbeShards(ctx)
	switch {
	case served == 0 && stated == 0:
		return fmt.Errorf("no Redis shard answers: %w", err)
	case served == 0 && !a.reach.MostPrimaries():
		return fmt.Errorf("no Redis shard serves, and this instance reaches no more than half of the primaries: %w", err)
	}
	if behind := a.reach.Behind(); behind != nil {
		return behind
	}
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelDebug, "ready with shards not answering", slog.Any("err", err))
	}
	return nil
}

// Drivers is the driver store (apollo dev seeds its fleet through it).
func (a *App) Drivers() *redisstore.Drivers { return a.drivers }

// DriverAPI is the driver store with bookings moved on by drivers' answers.
func (a *App) DriverAPI() DriversWithBookings { return DriversWithBookings{a.drivers, a.bookings} }

// Listen binds both listeners, so their addresses are known before Serve.
func (a *App) Listen() error {
	var err error
	if a.apiLn, err = net.Listen("tcp", a.cfg.Listen); err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
	}
	if a.adminLn, err = net.Listen("tcp", a.cfg.AdminListen); err != nil {
		a.apiLn.Close()
		return fmt.Errorf("admin listen on %s: %w", a.cfg.AdminListen, err)
	}
	if a.health != nil {
		if a.healthLn, err = net.Listen("tcp", a.cfg.HealthListen); err != nil {
			a.apiLn.Close()
			a.adminLn.Close()
			return fmt.Errorf("health listen on %s: %w", a.cfg.HealthListen, err)
		}
		a.healthLn = httpapi.WrapListener(a.healthLn)
	}
	// net/http's own refusals (a 431 for oversized headers, ...) become
	// JSON errors like every other.
	a.apiLn, a.adminLn = httpapi.WrapListener(a.apiLn), httpapi.WrapListener(a.adminLn)
	return nil
}

// HealthAddr is the bound address of the health listener ("" without one).
func (a *App) HealthAddr() string {
	if a.healthLn == nil {
		return ""
	}
	return a.healthLn.Addr().String()
}

// APIAddr and AdminAddr are the bound addresses (after Listen).
func (a *App) APIAddr() string   { return a.apiLn.Addr().String() }
func (a *App) AdminAddr() string { return a.adminLn.Addr().String() }

// Serve serves until ctx ends, then shuts down in order: report not ready,
// wait DrainDelay, stop accepting and finish in-flight requests, close the
// admin listener, close Redis connections.
func (a *App) Serve(ctx context.Context) error {
	if a.apiLn == nil {
		if err := a.Listen(); err != nil {
			return err
		}
	}
	type server struct {
		srv *http.Server
		ln  net.Listener
	}
	servers := []server{{a.api, a.apiLn}, {a.admin, a.adminLn}}
	if a.health != nil {
		servers = append(servers, server{a.health, a.healthLn})
	}
	errc := make(chan error, len(servers))
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	a.startBackground()
	a.log.Info("apollo serving", "api", a.APIAddr(), "admin", a.AdminAddr(), "health", a.HealthAddr(), "admin_token", a.cfg.AdminToken != "")
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.draining.Store(true)
	a.log.Info("draining", "delay", a.cfg.DrainDelay)
	// A draining instance is none for the others to be behind.
	wctx, wcancel := context.WithTimeout(context.Background(), time.Second)
	if err := a.reach.Withdraw(wctx); err != nil {
		a.log.Warn("withdraw this instance's reach reports; they run out within 3 s", "err", err)
	}
	wcancel()
	if serveErr == nil {
		select {
		case <-time.After(a.cfg.DrainDelay):
		case serveErr = <-errc:
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	a.stopAPI()
	err := errors.Join(serveErr, a.api.Shutdown(sctx), a.admin.Shutdown(sctx))
	if a.health != nil {
		err = errors.Join(err, a.health.Shutdown(sctx))
	}
	wg.Wait()
	a.stopBackground()
	err = errors.Join(err, a.router.Close())
	a.log.Info("apollo stopped")
	return err
}

// startBackground joins the fleet and starts the booking workers and the
// rules poller.
func (a *App) startBackground() {
	a.stopBg = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Fleet.RenewEvery)
	a.member.Start(ctx)
	cancel()
	a.bookings.Start()
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		a.rules.poll(a.cfg.RulesPollEvery, a.stopBg)
	}()
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		a.console.Run(a.stopBg)
	}()
	a.bg.Go(func() { a.reach.Run(a.stopBg) })
}

func (a *App) stopBackground() {
	close(a.stopBg)
	a.bg.Wait()
	if a.crashed.Load() {
		return
	}
	a.bookings.Stop()
	// After the workers: a partition handed back is claimed by another
	// instance at once, and must not still be worked here.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.member.Stop(ctx)
}

// Crash stops the instance's background work as a SIGKILL would, for
// drills that crash an instance in process: nothing is handed back, so the
// fleet takes its share over when its leases run out. Serve must still be
// ended (its context cancelled) to close the listeners.
func (a *App) Crash() {
	a.crashed.Store(true)
	a.reach.Quiet()
	a.member.Abandon()
	a.bookings.Abandon()
}

// Gatherer is the instance's metrics registry (what /metrics serves).
func (a *App) Gatherer() prometheus.Gatherer { return a.reg }

// Member is this instance in the fleet.
func (a *App) Member() *fleet.Member { return a.member }

// Bookings is the booking pipeline.
func (a *App) Bookings() *booking.Service { return a.bookings }

// Spampede is the demand-spike filter.
func (a *App) Spampede() *spampede.Filter { return a.filter }

// Close releases what New acquired, for an App that never served.
func (a *App) Close() error {
	for _, ln := range []net.Listener{a.apiLn, a.adminLn, a.healthLn} {
		if ln != nil {
			ln.Close()
		}
	}
	return a.router.Close()
}
