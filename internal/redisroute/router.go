package redisroute

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Router sends commands to a Redis Cluster. It is safe for concurrent use.
// It owns its background goroutines (topology refresh, stall watchdog,
// prober, replication, memory, clock and subscription checks, the reading
// of secret files) and the in-flight requests; Close stops and waits for
// all of them.
type Router struct {
	cfg   Config
	log   *slog.Logger
	m     *metrics
	clock clock

	topo atomic.Pointer[topology]
	// lastRefresh is the last refresh tried, for Status.
	lastRefresh atomic.Pointer[Refreshed]
	departedMu  sync.Mutex
	departed    map[string]departed // nodes that left the slot map, by address; under departedMu
	memMu       sync.Mutex
	memLast     map[string]NodeMemory // each node's last memory check, by address; under memMu
	rightsLast  map[string]string     // each node's denials at the last rights check; its goroutine's alone
	persistMu   sync.Mutex
	persistLast map[string]NodePersistence // each node's last persistence check, by address; under persistMu
	refreshCh   chan string
	refreshSeq  atomic.Uint32
	// checkNow asks for a replication check before the next tick: a node
	// waits for one to serve reads (awaitCheck).
	checkNow chan struct{}

	nodesMu sync.Mutex
	nodes   map[string]*node

	fenceOnce sync.Once
	fenceKeys []string // by slot; see fenceKey

	ejectMu    sync.Mutex   // serialises ejection and re-admission decisions
	stallFloor atomic.Int64 // unix nanos when the watchdog last found itself paused
	// steady is the clock the cluster's time is kept on (steady.go).
	steady steady
	// clusterOffset is how far the cluster's clock is from steady (ns),
	// once clusterKnown (setClusterOffset).
	clusterOffset atomic.Int64
	clusterKnown  atomic.Bool

	hedges  *budget
	retries *budget

	// migratingUntil (unix nanos): while slots move, replicas may answer
	// "missing" for keys already moved (they do not know a slot is
	// migrating), so reads go to primaries, which answer ASK instead.
	migratingUntil atomic.Int64
	// migrating tells how long each slot has kept redirecting (ASK,
	// TRYAGAIN): a migration left open.
	migrating migratingSlots

	subs subscriptions
	// credentials, when --redis-password-file is given, read it for
	// every new connection (credentials.go).
	credentials func(context.Context) (user, password string, err error)

	closed atomic.Bool
	// calls counts the Execs in flight, so that Close waits for them (each
	// ends at once with ErrClosed) before it waits for wg: only a call
	// starts senders, and wg.Add must not race with wg.Wait at zero.
	calls   sync.WaitGroup
	callsMu sync.RWMutex // orders an Exec's check of closed and calls.Add before Close's Wait
	stop    chan struct{}
	wg      sync.WaitGroup
	idle    chan func() // senders waiting for an attempt; see senders.go
}

// New connects to the cluster (one seed is enough), loads the slot table and
// starts the background goroutines. Metrics go to reg (nil: not exported).
func New(ctx context.Context, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid redis config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	// The secret files are read for every new connection, and every
	// MemoryCheckInterval besides (secrets), so that their metrics tell a
	// rotation or a file gone while no connection is made: a busy pool
	// keeps its connections for up to half an hour idle.
	var credentials func(context.Context) (string, string, error)
	var secrets []func()
	if cfg.PasswordFile != "" {
		pw := newPasswordFile(cfg.PasswordFile, cfg.Password, m, log)
		credentials = credentialsFrom(cfg.Username, pw)
		secrets = append(secrets, func() { pw.get() })
	}
	if cfg.TLSCertFile != "" {
		var first tls.Certificate
		if len(cfg.TLS.Certificates) > 0 {
			first = cfg.TLS.Certificates[0]
		} else if first, err = tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("redis TLS client certificate: %w", err)
		}
		cert := newClientCert(cfg.TLSCertFile, cfg.TLSKeyFile, first, m, log)
		cfg.TLS = withClientCert(cfg.TLS, cert)
		secrets = append(secrets, func() { cert.get() })
	}
	r := &Router{
		cfg:         cfg,
		credentials: credentials,
		log:         log,
		m:           m,
		clock:       realClock{},
		steady:      newSteady(cfg.wall),
		refreshCh:   make(chan string, 1),
		checkNow:    make(chan struct{}, 1),
		nodes:       map[string]*node{},
		departed:    map[string]departed{},
		memLast:     map[string]NodeMemory{},
		rightsLast:  map[string]string{},
		persistLast: map[string]NodePersistence{},
		hedges:      newBudget(cfg.HedgeBudget, cfg.BudgetBurst),
		retries:     newBudget(cfg.RetryBudget, cfg.BudgetBurst),
		stop:        make(chan struct{}),
		idle:        make(chan func()),
	}
	if err := r.refresh(ctx, refreshInitial); err != nil {
		r.closeNodes()
		return nil, fmt.Errorf("connect to redis cluster %v: %w", cfg.Addrs, err)
	}
	if reg != nil {
		// The 2019 signal: a slot map kept long after the cluster changed.
		// Every successful refresh (each RefreshInterval, and on errors)
		// installs a fresh one, so its age stays under the interval.
		age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apollo_redis_topology_age_seconds",
			Help: "Seconds since the slot map in use was fetched (CLUSTER SLOTS); it grows when refreshes fail."},
			func() float64 { return r.clock.Now().Sub(r.topo.Load().at).Seconds() })
		migrating := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apollo_redis_slot_migrating_seconds",
			Help: "The longest a slot has kept answering ASK or TRYAGAIN, with no pause of a minute: a reshard moves a slot in seconds; a migration left open (a reshard interrupted) keeps growing, and commands across its split never run."},
			func() float64 { return r.migrating.longest(r.clock.Now()).Seconds() })
		for _, g := range []prometheus.Collector{age, migrating} {
			if err := reg.Register(g); err != nil {
				r.closeNodes()
				return nil, err
			}
		}
	}
	r.wg.Add(1)
	go r.refreshLoop()
	// The clocks are read before New returns, under every policy (they go
	// through the probe pools, not the routing): Now is the cluster's time
	// from the first booking on, not this process's until the first check
	// (a step by the whole skew, mid-flight).
	r.readClusterTime()
	r.wg.Add(1)
	go r.every(cfg.MemoryCheckInterval, r.checkClocks)
	if len(secrets) > 0 {
		r.wg.Add(1)
		go r.every(cfg.MemoryCheckInterval, func() {
			for _, read := range secrets {
				read()
			}
		})
	}
	if cfg.Policy != Legacy2019 {
		// Replicas serve reads once judged (see awaitCheck): judged before
		// New returns, they serve from the first call.
		r.checkReplication()
		r.wg.Add(5)
		go func() { r.checkNodes(); r.every(cfg.MemoryCheckInterval, r.checkNodes) }() // exported from the start
		go r.every(time.Second, r.checkSubscriptions)
		go r.watchdogLoop()
		go r.every(cfg.ProbeInterval, r.probeEjected)
		go r.everyOr(cfg.ReplicaCheckInterval, r.checkNow, r.checkReplication)
		if len(cfg.Rights) > 0 {
			r.wg.Add(1)
			go func() { r.checkRights(); r.every(cfg.RightsCheckInterval, r.checkRights) }() // exported from the start
		}
	}
	return r, nil
}

// every runs f every d until Close: the body of a background goroutine
// the Router owns (counted in wg by the caller). A run that takes longer
// than d delays the next one; runs never overlap.
func (r *Router) every(d time.Duration, f func()) { r.everyOr(d, nil, f) }

// everyOr is every, also running f at once when wake receives.
func (r *Router) everyOr(d time.Duration, wake <-chan struct{}, f func()) {
	defer r.wg.Done()
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		case <-wake:
		}
		f()
	}
}

// Close stops the background goroutines, ends the calls in flight (their
// unanswered commands fail with ErrClosed, a write that may have been sent
// as ambiguous), waits for the requests they sent (bounded by the read
// timeout; twice that for a read queued behind another, see coalescer) and
// closes every connection.
func (r *Router) Close() error {
	r.callsMu.Lock()
	if r.closed.Swap(true) {
		r.callsMu.Unlock()
		return nil
	}
	r.callsMu.Unlock()
	close(r.stop)
	r.calls.Wait()
	r.wg.Wait()
	r.closeSubs()
	r.subs.wg.Wait()
	r.closeNodes()
	return nil
}

func (r *Router) closeNodes() {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	for _, n := range r.nodes {
		n.close()
	}
}

// Policy is the router's read policy.
func (r *Router) Policy() Policy { return r.cfg.Policy }

// Do runs one command.
func (r *Router) Do(ctx context.Context, cmd Cmd) Result {
	return r.Exec(ctx, []Cmd{cmd})[0]
}

// Exec runs cmds as pipelines (one per node) and returns one result per
// command, in order. One command's failure never fails another's; use
// Results.Err for all-or-nothing. Without a deadline on ctx, CallTimeout applies.
func (r *Router) Exec(ctx context.Context, cmds []Cmd) Results {
	res := make(Results, len(cmds))
	r.callsMu.RLock()
	if r.closed.Load() {
		r.callsMu.RUnlock()
		for i := range res {
			res[i].Err = ErrClosed
		}
		return res
	}
	r.calls.Add(1)
	r.callsMu.RUnlock()
	defer r.calls.Done()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.CallTimeout)
		defer cancel()
	}
	c := &call{r: r, ctx: ctx, cmds: cmds, res: res, st: make([]cmdState, len(cmds)), left: len(cmds),
		events: make(chan event, 8), done: make(chan struct{}), live: make([]*attempt, 0, 4)}
	// Room for each command's first two nodes in one allocation, not one
	// per command (a hedge or a retry is the second; more grow their own).
	tried := make([]*node, 2*len(cmds))
	for i := range c.st {
		c.st[i].tried = tried[2*i : 2*i : 2*i+2]
	}
	for i, cmd := range cmds {
		if err := cmd.validate(); err != nil {
			c.finish(i, Result{Err: fmt.Errorf("%w: %w", ErrInvalidCommand, err)})
		}
	}
	if c.left > 0 && r.cfg.Policy == Legacy2019 {
		r.execLegacy(c)
	} else if c.left > 0 {
		c.run(r.topo.Load())
	}
	r.noteWrites(ctx, cmds, res)
	return res
}

// Refresh reloads the topology now (for tests and admin tools).
func (r *Router) Refresh(ctx context.Context) error { return r.refresh(ctx, "manual") }
