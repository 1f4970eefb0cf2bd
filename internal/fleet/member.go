package fleet

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Lease is a partition held by this instance. Token fences it: the store
// acts on the partition for a token only while the lease still carries it.
type Lease struct {
	Partition int
	Token     string
}

// Store is where the members of a fleet meet.
type Store interface {
	// Heartbeat announces id as a member until `until`, and forgets the
	// members whose announcement ran out before now.
	Heartbeat(ctx context.Context, id string, now, until time.Time) error
	// Members lists the members announced past now.
	Members(ctx context.Context, now time.Time) ([]string, error)
	// Leave withdraws id's announcement.
	Leave(ctx context.Context, id string) error
	// Acquire takes partition p's lease for id for ttl if nobody holds it:
	// ok false when someone does.
	Acquire(ctx context.Context, p int, id string, ttl time.Duration) (l Lease, ok bool, err error)
	// Renew extends the leases still held with their tokens, in one
	// batch: kept[i] false if leases[i] was lost. On an error, kept says
	// what is known to be renewed (possibly nothing).
	Renew(ctx context.Context, leases []Lease, ttl time.Duration) (kept []bool, err error)
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

// Clock is a member's time. Local measures its leases: how long it may
// count on one since it was last renewed, which only this process reads.
// Shared stamps its heartbeat and reads the others', which every member
// compares with its own reading: it is the cluster's time, so that an
// instance whose host clock is off neither drops the others from the list
// (clock ahead: it took their shares too) nor stays in it long after it
// died (TestACrashedInstanceWhoseClockIsAheadIsTakenOverAfterItsLease).
type Clock struct {
	Local, Shared func() time.Time
}

// Member is this instance in the fleet: Start it to heartbeat, take and
// renew its share's leases; Stop hands them back.
type Member struct {
	cfg   Config
	id    string
	store Store
	clock Clock
	log   *slog.Logger
	m     Metrics

	mu    sync.Mutex
	owned map[int]held

	// behind, if set, says this instance cannot do its share (see
	// StandAsideWhile); aside: it stood aside at its last rebalance;
	// able: rebalances in a row since, at which behind said it can.
	behind func() error
	aside  bool
	able   int

	gained  chan struct{} // a signal: partitions were acquired
	stop    chan struct{}
	done    chan struct{} // closed when the loop ends, or by the first Stop of a member never started
	started bool          // under mu
	halted  bool          // under mu
	once    sync.Once
}

// NewMember returns the member id (unique per process) of the fleet.
func NewMember(cfg Config, id string, s Store, clock Clock, m Metrics, log *slog.Logger) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock.Local == nil || clock.Shared == nil {
		return nil, errors.New("fleet member: a local and a shared clock are both needed")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = noMetrics{}
	}
	return &Member{cfg: cfg, id: id, store: s, clock: clock, log: log, m: m, owned: map[int]held{},
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
	now := m.clock.Local()
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

// StandAsideWhile makes the member leave the fleet, handing its leases
// back, at each rebalance at which behind says this instance cannot do
// its share of the work, and join again once it can. An instance cut off
// from one primary that the others reach (Reach.Behind) stays a live
// member otherwise: its share's partitions on that primary stay its own,
// which it cannot renew and the others never take, and their due bookings
// wait for as long as the cut lasts. Call it before Start.
func (m *Member) StandAsideWhile(behind func() error) { m.behind = behind }

// Start joins the fleet: a first rebalance now (so the instance claims its
// share before it serves), then one each RenewEvery until Stop.
func (m *Member) Start(ctx context.Context) {
	m.mu.Lock()
	if m.started || m.halted {
		m.mu.Unlock()
		return
	}
	m.started = true
	m.mu.Unlock()
	m.Rebalance(ctx)
	go m.loop()
}

// halt ends the loop and waits for it.
func (m *Member) halt() {
	m.once.Do(func() {
		m.mu.Lock()
		m.halted = true
		started := m.started
		m.mu.Unlock()
		close(m.stop)
		if !started {
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
	m.log.Info("left the fleet", "handed_back", m.handBack(ctx))
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
// the live members: it releases the partitions no longer its own first
// (after it stops acting on them), renews the rest in one batch and takes
// the missing ones that are free.
func (m *Member) Rebalance(ctx context.Context) {
	if m.standAside(ctx) {
		return
	}
	start, shared := m.clock.Local(), m.clock.Shared()
	if err := m.store.Heartbeat(ctx, m.id, shared, shared.Add(m.cfg.LeaseTTL)); err != nil {
		m.log.Warn("fleet heartbeat", "err", err)
	}
	members, err := m.store.Members(ctx, shared)
	m.mu.Lock()
	owned := maps.Clone(m.owned)
	m.mu.Unlock()
	want := map[int]bool{}
	if err != nil {
		// Without the list the share is unknown: keep what is held.
		m.log.Warn("list the fleet; keeping the partitions held", "err", err)
		for p := range owned {
			want[p] = true
		}
	} else {
		for _, p := range Share(members, m.id, m.cfg.Partitions) {
			want[p] = true
		}
	}
	var release, renew []Lease
	for p, h := range owned {
		if want[p] {
			renew = append(renew, h.Lease)
		} else {
			release = append(release, h.Lease)
			delete(owned, p)
		}
	}
	if len(release) > 0 {
		// Stop acting on them before another member can take them.
		m.mu.Lock()
		for _, l := range release {
			delete(m.owned, l.Partition)
		}
		m.mu.Unlock()
		for _, l := range release {
			if err := m.store.Release(ctx, l); err != nil {
				m.log.Warn("hand a partition back; it is free when its lease runs out", "partition", l.Partition, "err", err)
			}
			m.m.Changed("released")
		}
	}
	if len(renew) > 0 {
		kept, err := m.store.Renew(ctx, renew, m.cfg.LeaseTTL)
		if err != nil {
			m.log.Warn("renew partition leases; each is kept until its time is up", "err", err)
			m.m.Failed("renew", 1)
		}
		for i, l := range renew {
			switch {
			case i < len(kept) && kept[i]:
				owned[l.Partition] = held{Lease: l, until: start.Add(m.cfg.LeaseTTL)}
			case err == nil:
				delete(owned, l.Partition)
				m.m.Changed("lost")
				m.log.Warn("lost a partition lease", "partition", l.Partition)
			}
		}
	}
	gained, failed := false, 0
	for p := range want {
		if _, ok := owned[p]; ok {
			continue
		}
		l, ok, err := m.store.Acquire(ctx, p, m.id, m.cfg.LeaseTTL)
		if err != nil {
			failed++
			continue
		}
		if !ok {
			continue // held by a member that has not let go yet: next time
		}
		owned[p] = held{Lease: l, until: start.Add(m.cfg.LeaseTTL)}
		m.m.Changed("acquired")
		gained = true
	}
	if failed > 0 {
		m.log.Warn("acquire partition leases", "failed", failed, "wanted", len(want))
		m.m.Failed("acquire", failed)
	}
	for p, h := range owned {
		if !m.clock.Local().Before(h.until) {
			delete(owned, p)
			m.m.Changed("lost")
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
	m.m.Owned(len(owned))
	m.m.Members(max(len(members), 1))
}

// standAside reports whether this instance is out of the fleet for this
// round: it leaves, handing back what it holds, when behind first says so,
// and stays out, heartbeating nothing, until behind has said it can do its
// share again at rejoinAfter rebalances in a row. A path that comes and
// goes would otherwise move the share to and fro at every change, and
// leave the cut primary's partitions without an owner for a lease time
// each time.
func (m *Member) standAside(ctx context.Context) bool {
	if m.behind == nil {
		return false
	}
	err := m.behind()
	switch {
	case err != nil && !m.aside:
		m.aside, m.able = true, 0
		m.log.Warn("stand aside from the fleet: this instance cannot do its share; the others take it over", "err", err)
		m.handBack(ctx)
	case err != nil:
		m.able = 0
	case m.aside:
		if m.able++; m.able >= rejoinAfter {
			m.aside = false
			m.log.Info("join the fleet again: this instance can do its share")
		}
	}
	return m.aside
}

// rejoinAfter is how many rebalances in a row an instance that stood aside
// must find itself able before it joins again: as many as Reach takes to
// judge it behind.
const rejoinAfter = 3

// handBack stops acting on every lease, leaves the fleet and hands the
// leases back, so the others take the share over at their next rebalance
// (a lease it cannot reach, when its lease time is up). Leaving first: a
// release to a primary that hangs can use up the round's time, and the
// others would then wait for the heartbeat to run out before taking any
// of the share. It returns how many leases it handed back.
func (m *Member) handBack(ctx context.Context) int {
	m.mu.Lock()
	leases := slices.Collect(maps.Values(m.owned))
	m.owned = map[int]held{}
	m.mu.Unlock()
	if err := m.store.Leave(ctx, m.id); err != nil {
		m.log.Warn("leave the fleet", "err", err)
	}
	for _, h := range leases {
		if err := m.store.Release(ctx, h.Lease); err != nil {
			m.log.Warn("hand a partition back", "partition", h.Partition, "err", err)
		}
		m.m.Changed("released")
	}
	m.m.Owned(0)
	return len(leases)
}

// ErrLeaseLost: a partition was acted on with a lease token it no longer
// carries; nothing was done.
var ErrLeaseLost = errors.New("partition lease no longer held")
