package spampede

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/geocell"
)

// Key names a counter: a service in a cell.
type Key struct {
	Service string
	Cell    geocell.Cell
}

func (k Key) String() string { return k.Service + ":" + k.Cell.String() }

// Store keeps the counters. Implementations must make Record atomic per
// key and never leave a key without its TTL.
type Store interface {
	// Counts returns key's counts in bucket and in bucket-1.
	Counts(ctx context.Context, key Key, bucket int64) (cur, prev int64, err error)
	// Record adds n to every key's count in bucket; each key expires ttl later.
	Record(ctx context.Context, keys []Key, bucket, n int64, ttl time.Duration) error
}

// Config tunes the filter's behaviour around its store.
type Config struct {
	// StoreTimeout bounds the admission read: past it, the booking is
	// admitted (fail open) and counted.
	StoreTimeout time.Duration
	// CountTimeout bounds RecordMiss, the count of a booking without a
	// driver that its answer waits for (first-miss): past it, the booking
	// goes uncounted, as while the breaker is open.
	CountTimeout time.Duration
	// BreakerFailures consecutive store failures open the breaker: for
	// BreakerCooldown, admission does not even try the store.
	BreakerFailures int
	BreakerCooldown time.Duration
	// MaxTrippedCells bounds the in-memory cache of tripped cells.
	MaxTrippedCells int
	// CountRejectedEvery counts every n-th booking turned away from a
	// tripped cell as a miss (0: none). Without it a cell's count decays
	// while it turns its storm away, and it reopens, admits a threshold's
	// worth of bookings that miss, and trips again, for as long as the
	// storm lasts. With it a cell stays tripped while the demand it turns
	// away, divided by n, would alone reach the threshold; a calmer cell
	// reopens as before. The price: a cell whose storm goes on stays
	// closed even if drivers arrive. The counted rejections of a cell are
	// written at most once per countWriteEvery, added up.
	CountRejectedEvery int
}

// countWriteEvery is how often a tripped cell writes the rejections it
// counted: one write per cell per second, whatever the storm's rate, instead
// of one per n rejections; the count is the same, a second later at most.
const countWriteEvery = time.Second

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{StoreTimeout: 10 * time.Millisecond, CountTimeout: 50 * time.Millisecond, BreakerFailures: 5, BreakerCooldown: time.Second, MaxTrippedCells: 100_000,
		CountRejectedEvery: 10}
}

// Validate reports an unusable config.
func (c Config) Validate() error {
	if c.StoreTimeout <= 0 || c.CountTimeout <= 0 || c.BreakerFailures < 1 || c.BreakerCooldown <= 0 || c.MaxTrippedCells < 1 {
		return errors.New("spampede: store timeout, count timeout, breaker failures, breaker cooldown and max tripped cells must be positive")
	}
	if c.CountRejectedEvery < 0 {
		return errors.New("spampede: count-rejected-every must not be negative")
	}
	return nil
}

// tripped is a cell turned away until `until`.
type tripped struct {
	until time.Time
	// by is the rule it tripped under: a trip stands only while that rule
	// is still the one in force for the cell (see cached).
	by       Rule
	count    float64
	rejected int       // turned away since it tripped, for CountRejectedEvery
	owed     int64     // rejections counted as misses and not yet written
	written  time.Time // when owed misses were last written
}

// Filter decides admissions. It is safe for concurrent use.
type Filter struct {
	cfg     Config
	store   Store
	obs     Observer
	rules   atomic.Pointer[RuleSet]
	breaker breaker

	mu    sync.Mutex
	cells map[Key]tripped
}

// New returns a filter with rules rs. obs may be nil.
func New(cfg Config, store Store, rs RuleSet, obs Observer) (*Filter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if obs == nil {
		obs = NopObserver{}
	}
	f := &Filter{cfg: cfg, store: store, obs: obs, cells: map[Key]tripped{}, breaker: breaker{failures: cfg.BreakerFailures, cooldown: cfg.BreakerCooldown}}
	if err := f.SetRules(rs); err != nil {
		return nil, err
	}
	return f, nil
}

// SetRules swaps the rules in; in-flight decisions finish with the old ones.
func (f *Filter) SetRules(rs RuleSet) error {
	if err := rs.Validate(); err != nil {
		return err
	}
	f.rules.Store(&rs)
	return nil
}

// Rules returns the rules in force.
func (f *Filter) Rules() RuleSet { return *f.rules.Load() }

// Admit decides whether a booking for service at the pickup may enter the
// pipeline at now. It never returns an error: when in doubt, it admits.
func (f *Filter) Admit(ctx context.Context, service string, lat, lng float64, now time.Time) Decision {
	rule, ok := f.Rules().Match(service, lat, lng)
	if !ok {
		return f.decide(Decision{Outcome: NoRule})
	}
	cell, err := geocell.Of(lat, lng, rule.CellBits)
	if err != nil {
		return f.decide(Decision{Outcome: NoRule})
	}
	key := Key{Service: service, Cell: cell}
	d := Decision{Rule: rule.Name, Cell: cell}
	t, ok := f.cached(key, rule, now)
	if t.write > 0 {
		// Before the counts are read again, when the cell has just reopened.
		f.countRejected(ctx, rule, service, lat, lng, now, t.write)
	}
	if ok {
		d.Count, d.RetryAfter = t.count, retryAfter(t.until, now)
		d.Outcome = RejectedCached
		if t.by.Shadow {
			d.Outcome = ShadowRejected
		}
		return f.decide(d)
	}
	if !f.breaker.allow(now) {
		d.Outcome = FailOpen
		return f.decide(d)
	}
	size := rule.bucketSize()
	cctx, cancel := context.WithTimeout(ctx, f.cfg.StoreTimeout)
	cur, prev, err := f.store.Counts(cctx, key, geocell.Bucket(now, size))
	cancel()
	f.breaker.record(now, err == nil)
	if err != nil {
		d.Outcome = FailOpen
		return f.decide(d)
	}
	// The last bucket-length of time: all of this bucket, and the part of
	// the previous one not yet a bucket-length ago.
	d.Count = float64(cur) + float64(prev)*(1-geocell.BucketProgress(now, size))
	if d.Count < float64(rule.Threshold) {
		d.Outcome = Admitted
		return f.decide(d)
	}
	until := now.Add(max(rule.holdDown(), time.Second))
	f.trip(key, tripped{until: until, by: rule, count: d.Count}, now)
	f.obs.Tripped()
	d.RetryAfter = retryAfter(until, now)
	d.Outcome = Rejected
	if rule.Shadow {
		d.Outcome = ShadowRejected
	}
	return f.decide(d)
}

func (f *Filter) decide(d Decision) Decision {
	f.obs.Decided(d.Outcome)
	return d
}

func retryAfter(until, now time.Time) time.Duration {
	return time.Duration(math.Ceil(until.Sub(now).Seconds())) * time.Second
}

// hit is a cached trip as one admission sees it.
type hit struct {
	tripped
	write int64 // rejections counted as misses that this admission writes
}

// cached looks k up among the tripped cells and, if it is there, tripped
// under rule (the one in force for it now), counts this admission as
// turned away. The admission that finds the cell's counted rejections a
// countWriteEvery old, or finds the cell reopened, takes them to write. A
// trip under a rule since edited (turned to shadow, a threshold raised, a
// shorter hold-down) is over: the cell is decided again by the rule in
// force, as an instance that never tripped it decides it. Otherwise the
// edit would wait out the old hold-down (up to an hour) here alone.
func (f *Filter) cached(k Key, rule Rule, now time.Time) (hit, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.cells[k]
	if ok && (!now.Before(t.until) || !t.by.same(rule)) {
		delete(f.cells, k)
		return hit{tripped: t, write: t.owed}, false
	}
	if !ok {
		return hit{}, false
	}
	t.rejected++
	if n := f.cfg.CountRejectedEvery; n > 0 && !t.by.Shadow && t.rejected%n == 0 {
		t.owed++
	}
	h := hit{tripped: t}
	if t.owed > 0 && now.Sub(t.written) >= countWriteEvery {
		h.write, t.owed, t.written = t.owed, 0, now
	}
	f.cells[k] = t
	return h, true
}

// countRejected records n turned-away bookings as misses, within the
// admission's deadline; a failure costs only a slightly lower count.
func (f *Filter) countRejected(ctx context.Context, rule Rule, service string, lat, lng float64, now time.Time, n int64) {
	if !f.breaker.allow(now) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, f.cfg.StoreTimeout)
	defer cancel()
	err := f.record(cctx, rule, service, lat, lng, now, n)
	f.breaker.record(now, err == nil)
}

func (f *Filter) trip(k Key, t tripped, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cells) >= f.cfg.MaxTrippedCells {
		// Over, or tripped under a rule since edited: a cell whose key
		// the edit changed (its cell bits, the rule removed) is never
		// looked up again to be dropped.
		rules := f.Rules()
		for key, old := range f.cells {
			if !now.Before(old.until) || !rules.has(old.by) {
				delete(f.cells, key)
			}
		}
	}
	if len(f.cells) < f.cfg.MaxTrippedCells {
		f.cells[k] = t
	}
}

// RecordUnallocated counts a booking that found no driver, in its cell's
// bucket and in its 8 neighbours' (each cell counts its 3 × 3 block),
// waiting as long as ctx allows: for a booking given up by a worker, which
// nothing waits on (--spampede-count-at deadline).
func (f *Filter) RecordUnallocated(ctx context.Context, service string, lat, lng float64, now time.Time) error {
	rule, ok := f.Rules().Match(service, lat, lng)
	if !ok {
		return nil
	}
	return f.recordUnallocated(ctx, rule, service, lat, lng, now)
}

// RecordMiss counts a booking whose first attempt found no driver, as
// RecordUnallocated does, for an answer that waits on it (first-miss): it
// waits at most CountTimeout, and while the breaker is open (the counters
// keep failing admission's reads) nothing is sent and the booking goes
// uncounted, as admission fails open meanwhile. Its outcome does not feed
// the breaker: a count is a write to nine keys, slower than admission's
// read, and a slow spell of writes must not turn admission's filtering off.
func (f *Filter) RecordMiss(ctx context.Context, service string, lat, lng float64, now time.Time) error {
	rule, ok := f.Rules().Match(service, lat, lng)
	if !ok {
		return nil
	}
	if f.breaker.open(now) {
		f.obs.RecordFailed()
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, f.cfg.CountTimeout)
	defer cancel()
	return f.recordUnallocated(cctx, rule, service, lat, lng, now)
}

func (f *Filter) recordUnallocated(ctx context.Context, rule Rule, service string, lat, lng float64, now time.Time) error {
	if err := f.record(ctx, rule, service, lat, lng, now, 1); err != nil {
		f.obs.RecordFailed()
		return fmt.Errorf("spampede: record unallocated booking: %w", err)
	}
	return nil
}

// record adds n misses to the 3 × 3 block around the pickup's cell.
func (f *Filter) record(ctx context.Context, rule Rule, service string, lat, lng float64, now time.Time, n int64) error {
	cell, err := geocell.Of(lat, lng, rule.CellBits)
	if err != nil {
		return err
	}
	keys := []Key{{Service: service, Cell: cell}}
	for _, n := range cell.Neighbors() {
		keys = append(keys, Key{Service: service, Cell: n})
	}
	size := rule.bucketSize()
	// A bucket is read as "previous" during the next one: keep it two
	// bucket-lengths, plus slack for clock skew between instances.
	ttl := 2*size.Duration() + 10*time.Second
	return f.store.Record(ctx, keys, geocell.Bucket(now, size), n, ttl)
}

// CellState is a tripped cell, for the admin API.
type CellState struct {
	Key    string    `json:"cell"`
	Rule   string    `json:"rule"`
	Count  float64   `json:"count"`
	Until  time.Time `json:"until"`
	Shadow bool      `json:"shadow"`
	// The key's parts, for callers that draw the cell.
	Service string       `json:"-"`
	Cell    geocell.Cell `json:"-"`
}

// TrippedCells lists up to top cells tripped at now, highest count first.
func (f *Filter) TrippedCells(now time.Time, top int) []CellState {
	rules := f.Rules()
	f.mu.Lock()
	var out []CellState
	for k, t := range f.cells {
		// A trip under a rule since edited no longer turns anything away
		// (cached drops it at the cell's next admission): not listed.
		if now.Before(t.until) && rules.has(t.by) {
			out = append(out, CellState{Key: k.String(), Rule: t.by.Name, Count: t.count, Until: t.until, Shadow: t.by.Shadow, Service: k.Service, Cell: k.Cell})
		}
	}
	f.mu.Unlock()
	sortCells(out)
	if len(out) > top {
		out = out[:top]
	}
	return out
}
