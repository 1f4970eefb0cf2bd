package redisroute

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// node is one Redis server as this process sees it: a connection pool and
// the health we measure from our own traffic.
type node struct {
	addr   string
	client *redis.Client
	pipe   pipeliner     // the request path; client, except in tests
	reads  coalescer     // plain reads to pipe, merged when it is busy
	probe  *redis.Client // separate, tiny pool: probes never queue behind stuck requests
	// asks is a write proof's path to a replica (proof.go): a small pool of
	// its own, without the request pool's hold on a replica held out of
	// reads (restart.go), which must be asked all the same.
	asks    *redis.Client
	askPipe pipeliner // asks, except in tests
	// reach pings the node for fleet readiness (ReachPrimaries): a
	// connection of its own, which no other check's deadline closes, so a
	// busy instance and an idle one find the same.
	reach *redis.Client

	ejected      atomic.Bool
	behind       atomic.Bool  // a replica serving stale data; see replication.go
	ewmaNanos    atomic.Int64 // recent round-trip time of a sub-batch
	inflight     atomic.Int64
	lastProgress atomic.Int64 // unix nanos of the last reply, or of going busy
	listedAt     atomic.Int64 // unix nanos of the last CLUSTER SLOTS answer that listed it; see omitted.go
	// ownerAt (unix nanos): when a redirect last named it a slot's owner
	// (see restart.go).
	ownerAt atomic.Int64
	// unackedUntil (unix nanos): a write to this node, as a primary, had
	// fewer replica acknowledgements than it asked for; until then its
	// reads are confirmed (see suspectFallback).
	unackedUntil atomic.Int64
	// lagsWritesUntil (unix nanos): as a replica, it stayed behind a write
	// for the whole ack timeout while in step; until then write proofs do
	// not wait for it (see proof.go).
	lagsWritesUntil atomic.Int64

	fallback *rate.Limiter // reads falling back to this node while it is a primary
	probeOK  int           // consecutive successful probes; under the router's ejectMu
	// joined is when the node was created or last re-admitted: replication
	// checks asked before it say nothing of it (see awaitCheck). Under the
	// router's ejectMu.
	joined time.Time
	// runID is the run_id of the Redis process last found behind the
	// address, by a request connection (runIDAt: when it connected) or a
	// replication check (runIDAt: when the check was asked); "" until one
	// did. Under the router's ejectMu (see restart.go).
	runID   string
	runIDAt time.Time
	// Why and when the node was last ejected; under the router's ejectMu.
	ejectReason string
	ejectedAt   time.Time
	repl        atomic.Pointer[verdict]   // the last replication check's finding
	clock       atomic.Pointer[NodeClock] // the last precise reading of its clock; see skew.go
	skewed      atomic.Bool               // its clock was last read off this host's by over ClockSkewWarn; see skew.go
	full        atomic.Bool               // refused a write for memory (OOM) since it last had room; see fence.go
	certExpiry  atomic.Int64              // when the TLS certificate it last presented expires, Unix seconds; see tlscerts.go
	m           nodeMetrics
}

// newNode makes the node at addr. credentials, if not nil, give each new
// connection its user and password (credentials.go). connected, if not nil, is
// told the run id of the process behind each new request connection,
// which it may refuse (see restart.go).
func newNode(addr string, cfg Config, m *metrics, credentials func(context.Context) (string, string, error), connected func(*node, string) error) *node {
	n := &node{addr: addr, reads: coalescer{after: cfg.CoalesceAfter}, m: m.forNode(addr)}
	tlsConfig := WithCertExpiry(cfg.TLS, func(at time.Time) { n.certExpiry.Store(at.Unix()) })
	opt := &redis.Options{
		Addr:                  addr,
		Username:              cfg.Username,
		Password:              cfg.Password,
		TLSConfig:             tlsConfig,
		Dialer:                Dialer(cfg.SourceAddr, tlsConfig),
		DialTimeout:           cfg.DialTimeout,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.ReadTimeout,
		PoolSize:              cfg.PoolSize,
		PoolTimeout:           cfg.CallTimeout,
		MaxRetries:            -1, // retries are routing decisions, made here
		DialerRetries:         1,
		Protocol:              2,
		ContextTimeoutEnabled: true, // a caller's deadline bounds the wait on the wire
		DisableIdentity:       true,
		// READONLY lets a replica serve reads for its slots; a primary ignores it.
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() },
	}
	if credentials != nil {
		opt.CredentialsProviderContext = credentials
	}
	probeOpt := *opt
	probeOpt.PoolSize = 1
	probeOpt.PipelinePoolSize = -1
	if connected != nil {
		// Not the probes': they read no data, and the check that would
		// release a refused node asks through them.
		opt.OnConnect = n.onConnect(connected)
	}
	n.client = redis.NewClient(opt)
	n.pipe = goRedisPipeliner{n.client}
	n.probe = redis.NewClient(&probeOpt)
	askOpt := probeOpt
	askOpt.PoolSize = cfg.PoolSize // dialled as needed
	askOpt.OnConnect = nil         // INFO needs no READONLY
	// An ask has StallAfter (proof.go): a wait for a free connection and a
	// dial each end well within it, so that the ask's own deadline is met
	// only by silence on the wire, and a wait that found no connection
	// free (ErrPoolTimeout) is told apart from a node that is gone.
	askOpt.PoolTimeout = cfg.StallAfter / 2
	askOpt.DialTimeout = min(cfg.DialTimeout, cfg.StallAfter/2)
	n.asks = redis.NewClient(&askOpt)
	reachOpt := probeOpt
	reachOpt.OnConnect = nil // PING needs no READONLY
	// A ping a round needs one connection; the pool's size is the count of
	// failed dials in a row after which go-redis stops dialling until a
	// dial in the background succeeds (up to a second after the path is
	// back). At 1 it would be one.
	reachOpt.PoolSize = 64
	n.reach = redis.NewClient(&reachOpt)
	// Errors before a connection's first reply say nothing was sent on it
	// (setupconn.go).
	for _, c := range []*redis.Client{n.client, n.probe, n.asks, n.reach} {
		c.AddHook(setUpHook{})
	}
	n.askPipe = goRedisPipeliner{n.asks}
	if cfg.PrimaryFallbackRate > 0 {
		n.fallback = rate.NewLimiter(rate.Limit(cfg.PrimaryFallbackRate), max(cfg.PrimaryFallbackRate/10, 1))
	}
	n.ewmaNanos.Store(int64(time.Millisecond))
	return n
}

func (n *node) close() {
	n.client.Close()
	n.probe.Close()
	n.asks.Close()
	n.reach.Close()
}

// begin marks a request in flight. Going busy is stamped before the
// request is counted, and stalled reads in the opposite order: a node seen
// with a request in flight is never seen with the stamp of its last answer
// from before an idle spell (which would make it look silent for that
// whole spell).
func (n *node) begin(now time.Time) {
	for {
		k := n.inflight.Load()
		if k == 0 {
			n.lastProgress.Store(now.UnixNano())
		}
		if n.inflight.CompareAndSwap(k, k+1) { // else another request began or ended: look again
			return
		}
	}
}

// end marks a request done. Only an answer (even an error reply) counts as
// progress and as a latency sample; it is stamped before the request stops
// counting, for the same reason as in begin.
func (n *node) end(now time.Time, rtt time.Duration, answered bool) {
	if answered {
		n.lastProgress.Store(now.UnixNano())
		old := n.ewmaNanos.Load()
		n.ewmaNanos.Store(old + (int64(rtt)-old)/8)
		n.m.latency.Observe(rtt.Seconds())
	}
	n.inflight.Add(-1)
}

// stalled reports a node that has requests waiting and has answered nothing
// for at least d: the signature of a hung process.
// floor is the time the router itself last resumed after a pause (see
// watchdogLoop): no node is blamed for silence while we were not listening.
func (n *node) stalled(now time.Time, d time.Duration, floor int64) bool {
	if n.inflight.Load() == 0 { // loaded first: see begin
		return false
	}
	last := max(n.lastProgress.Load(), floor)
	return now.UnixNano()-last >= int64(d)
}

func (n *node) latency() time.Duration { return time.Duration(n.ewmaNanos.Load()) }

// hedgeDelay is how long to wait for this node before asking another one.
func (n *node) hedgeDelay(cfg Config) time.Duration {
	d := time.Duration(float64(n.latency()) * cfg.HedgeFactor)
	return min(max(d, cfg.HedgeMin), cfg.HedgeMax)
}

func (n *node) healthy() bool { return !n.ejected.Load() }
