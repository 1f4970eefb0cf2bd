package fleet

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Lease is a partition held by this instance. Token fences it: the store
// acts on the partition for a token only while the lease still carries it.
type Lease struct {
	Partition int
	Token     string
}

// Store is where the members of a fleet meet.
type Store interface {
	// Heartbeat announces id as a member until `until`.
	Heartbeat(ctx context.Context, id string, until time.Time) error
	// Members lists the members announced past now.
	Members(ctx context.Context, now time.Time) ([]string, error)
	// Leave withdraws id's announcement.
	Leave(ctx context.Context, id string) error
	// Acquire takes partition p's lease for id for ttl if nobody holds it:
	// ok false when someone does.
	Acquire(ctx context.Context, p int, id string, ttl time.Duration) (l Lease, ok bool, err error)
	// Renew extends a lease still held with its token: ok false if lost.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (ok bool, err error)
	// Release gives a lease up if it is still held with its token.
	Release(ctx context.Context, l Lease) error
}

// held is a lease and how long this instance may count on it: until the
// last renewal that succeeded, measured from before it was sent, plus the
// lease time.
type held struct {
	Lease
	until time.Time
}

// Member is this instance in the fleet: Start it to heartbeat, take and
// renew its share's leases; Stop hands them back.
type Member struct {
	cfg   Config
	id    string
	store Store
	now   func() time.Time
	log   *slog.Logger
	m     metrics

	mu    sync.Mutex
	owned map[int]held

	gained  chan struct{} // a signal: partitions were acquired
	stop    chan struct{}
	done    chan struct{} // closed when the loop ends, or by the first Stop of a member never started
	started bool
	once    sync.Once
}

// NewMember returns the member id (unique per process) of the fleet.
func NewMember(cfg Config, id string, s Store, now func() time.Time, reg prometheus.Registerer, log *slog.Logger) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Member{cfg: cfg, id: id, store: s, now: now, log: log, m: m, owned: map[int]held{},
		gained: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Gained signals (without blocking the member) that partitions were
// acquired: their due bookings, a crashed member's among them, can be
// claimed at once rather than at the next scan.
func (m *Member) Gained() <-chan struct{} { return m.gained }

// ID is the member's name in the fleet.
func (m *Member) ID() string { return m.id }

// Partitions is how many partitions the fleet shares.
func (m *Member) Partitions() int { return m.cfg.Partitions }

// Owned lists the leases this instance may act on now, by partition.
func (m *Member) Owned() []Lease {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Lease, 0, len(m.owned))
	for _, p := range slices.Sorted(maps.Keys(m.owned)) {
		if h := m.owned[p]; now.Before(h.until) {
			out = append(out, h.Lease)
		}
	}
	return out
}

// Start joins the fleet: a first rebalance now (so the instance claims its
// share before it serves), then one each RenewEvery until Stop.
func (m *Member) Start(ctx context.Context) {
	m.Rebalance(ctx)
	m.started = true
	go m.loop()
}

// halt ends the loop and waits for it.
func (m *Member) halt() {
	m.once.Do(func() {
		close(m.stop)
		if !m.started {
			close(m.done)
		}
	})
	<-m.done
}

func (m *Member) loop() {
	defer close(m.done)
	tick := time.NewTicker(m.cfg.RenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RenewEvery)
		m.Rebalance(ctx)
		cancel()
	}
}

// Stop ends the renewals, hands every lease back and leaves the fleet, so
// the others take the share over at their next rebalance rather than
// after the lease time. Call it after the work on the partitions stopped.
func (m *Member) Stop(ctx context.Context) {
	m.halt()
	m.mu.Lock()
	leases := slices.Collect(maps.Values(m.owned))
	m.owned = map[int]held{}
	m.mu.Unlock()
	for _, h := range leases {
		if err := m.store.Release(ctx, h.Lease); err != nil {
			m.log.Warn("hand a partition back", "partition", h.Partition, "err", err)
		}
		m.m.changes.WithLabelValues("released").Inc()
	}
	if err := m.store.Leave(ctx, m.id); err != nil {
		m.log.Warn("leave the fleet", "err", err)
	}
	m.m.owned.Set(0)
	m.log.Info("left the fleet", "handed_back", len(leases))
}

// Abandon ends the renewals without handing anything back, as a crash
// would: the leases run out, and the fleet takes the share over then.
// For drills that crash an instance in process.
func (m *Member) Abandon() {
	m.halt()
	m.mu.Lock()
	m.owned = map[int]held{}
	m.mu.Unlock()
}

// Rebalance heartbeats, then works towards this member's fair share of
// the live members: it releases the partitions no longer its own first,
// renews the rest and takes the missing ones that are free.
func (m *Member) Rebalance(ctx context.Context) {
	start := m.now()
	if err := m.store.Heartbeat(ctx, m.id, start.Add(m.cfg.LeaseTTL)); err != nil {
		m.log.Warn("fleet heartbeat", "err", err)
	}
	members, err := m.store.Members(ctx, start)
	if err != nil {
		// Without the list the share is unknown: keep what is held.
		m.log.Warn("list the fleet", "err", err)
		members = nil
	}
	m.mu.Lock()
	owned := maps.Clone(m.owned)
	m.mu.Unlock()
	want := map[int]bool{}
	if err == nil {
		for _, p := range Share(members, m.id, m.cfg.Partitions) {
			want[p] = true
		}
	} else {
		for p := range owned {
			want[p] = true
		}
	}
	for p, h := range owned {
		switch {
		case !want[p]:
			if err := m.store.Release(ctx, h.Lease); err != nil {
				m.log.Debug("release a partition", "partition", p, "err", err)
			}
			delete(owned, p)
			m.m.changes.WithLabelValues("released").Inc()
		default:
			ok, err := m.store.Renew(ctx, h.Lease, m.cfg.LeaseTTL)
			switch {
			case err != nil: // kept until its time is up
			case ok:
				h.until = start.Add(m.cfg.LeaseTTL)
				owned[p] = h
			default:
				delete(owned, p)
				m.m.changes.WithLabelValues("lost").Inc()
				m.log.Warn("lost a partition lease", "partition", p)
			}
		}
	}
	gained := false
	for p := range want {
		if _, ok := owned[p]; ok {
			continue
		}
		l, ok, err := m.store.Acquire(ctx, p, m.id, m.cfg.LeaseTTL)
		if err != nil || !ok {
			continue // held by a member that has not let go yet, or Redis is away: next time
		}
		owned[p] = held{Lease: l, until: start.Add(m.cfg.LeaseTTL)}
		m.m.changes.WithLabelValues("acquired").Inc()
		gained = true
	}
	for p, h := range owned {
		if !m.now().Before(h.until) {
			delete(owned, p)
			m.m.changes.WithLabelValues("lost").Inc()
		}
	}
	m.mu.Lock()
	m.owned = owned
	m.mu.Unlock()
	if gained {
		select {
		case m.gained <- struct{}{}:
		default:
		}
	}
	m.m.owned.Set(float64(len(owned)))
	m.m.members.Set(float64(max(len(members), 1)))
}

// ErrLeaseLost: a partition was acted on with a lease token it no longer
// carries; nothing was done.
var ErrLeaseLost = errors.New("partition lease no longer held")
