package booking

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Admitter is the Spampede filter.
type Admitter interface {
	Admit(ctx context.Context, service string, lat, lng float64, now time.Time) spampede.Decision
	// RecordMiss counts a booking whose first attempt found no driver; the
	// booking's answer waits on it (bounded by the filter).
	RecordMiss(ctx context.Context, service string, lat, lng float64, now time.Time) error
	// RecordUnallocated counts a booking given up, from a worker.
	RecordUnallocated(ctx context.Context, service string, lat, lng float64, now time.Time) error
}

// Allocator reserves a driver for a booking.
type Allocator interface {
	Allocate(ctx context.Context, bookingID, service string, pickup driver.Location, now time.Time) (driverID string, until time.Time, err error)
}

// Drivers is the driver store as the pipeline needs it.
type Drivers interface {
	// Release frees a driver from bookingID's reservation ending at until
	// (zero: whichever it holds for the booking): expire when the
	// reservation lapsed, decline otherwise. A driver that no longer holds
	// that reservation is released already (nil): the booking may have
	// reserved it again since, and only that later reservation's own
	// release may end it. An expiry of a reservation the driver accepted,
	// or any release of a driver on its trip, is refused:
	// ErrDriverAccepted (a decline does free a driver that accepted).
	Release(ctx context.Context, driverID, bookingID string, until time.Time, expired bool, now time.Time) error
	Get(ctx context.Context, id string) (driver.Driver, error)
	Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error)
}

// Store persists bookings. Create is idempotent by booking ID; Update is a
// compare-and-set on the version (ErrConflict when it fails) and keeps the
// open-bookings index in step: a final booking leaves it, an open one is
// scheduled at its DueAt, and an accepted one leaves it only if its entry
// is still due when its previous version was (a claim may have moved it;
// the entry then stays until a worker claims it and Forgets it). A booking
// that reopens (accepted, back to searching) is indexed at its DueAt
// before its record is written, as Create does, and nothing is written if
// that fails.
type Store interface {
	// Create may index the booking at its DueAt before it writes the
	// record, and writes nothing after ctx's deadline.
	Create(ctx context.Context, b Booking) (stored Booking, created bool, err error)
	Get(ctx context.Context, id string) (Booking, error)
	// Exists says whether a booking may be stored: a plain read of its
	// primary, not confirmed by a replica, for the lookup before a create
	// (whose own write is confirmed). A yes is read again with Keep before
	// anything is returned.
	Exists(ctx context.Context, id string) (bool, error)
	// Keep returns a stored booking for an idempotent retry, confirmed,
	// once no Withdraw can delete it any more (ErrNotFound if there is
	// none): the create it retries may be withdrawing it, and the retry is
	// about to report it. A failure is never ErrUnconfirmed.
	Keep(ctx context.Context, id string) (Booking, error)
	Update(ctx context.Context, old, next Booking) error
	// Claim returns up to limit open bookings due by now from the
	// partitions of the leases, earliest first in each, and holds each
	// from other claims until now+hold: an instance that claims a booking
	// and then does nothing (it crashed, or its worker failed) lets it
	// come back after hold, and a booking whose advance keeps failing
	// cannot keep its place at the front. A lease lost meanwhile claims
	// nothing (fleet.ErrLeaseLost, with what the others claimed).
	Claim(ctx context.Context, leases []fleet.Lease, now time.Time, hold time.Duration, limit int) ([]string, error)
	// Schedule sets when an open booking is due next; a booking no longer
	// open is left alone.
	Schedule(ctx context.Context, id string, at time.Time) error
	// Forget removes a booking from the open index if its entry is still
	// due at `due`, as a claim left it: an entry written since (the
	// booking reopened, its driver backing out, or a create retried) is
	// another's, and a removal sent late, by an instance paused after its
	// read, must not take it away (nothing would ever index the booking
	// again).
	Forget(ctx context.Context, id string, due time.Time) error
	// Withdraw deletes a booking that was just created and never
	// reported as created, unless something has changed or kept it since,
	// or another attempt stored it anew: b must be the value given to
	// Create, unchanged, which is how its own attempt's record is known.
	Withdraw(ctx context.Context, b Booking) error
}

// Shares is this instance's part of the open index: the partitions whose
// due bookings its workers claim (a fleet.Member, or fleet.Alone).
type Shares interface {
	Owned() []fleet.Lease
	// Gained fires when partitions were added: they are scanned at once.
	Gained() <-chan struct{}
}

// Watcher is a store that can tell a long poll when a booking changes,
// so that waiting costs nothing while nothing happens. A store without it
// is polled.
type Watcher interface {
	// Watch returns once every change of booking id from now on is sure
	// to be signalled on the Watch.
	Watch(ctx context.Context, id string) (Watch, error)
}

// Watch hears one booking's changes: Changed fires on each (one pending
// at most); Lost closes if changes may have been missed from some point
// on (watch again, then read). Stop ends it.
type Watch struct {
	Changed <-chan struct{}
	Lost    <-chan struct{}
	Stop    func()
}

// Reservations lists the drivers whose reservation lapsed, for the sweep.
type Reservations interface {
	// ClaimLapsed returns up to limit drivers still reserved after their
	// reservation's end (plus the store's grace), holding each from other
	// claims until now+hold. With an error it may still return those of
	// the parts of its index it could read.
	ClaimLapsed(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]driver.Driver, error)
}

// Config tunes the pipeline.
type Config struct {
	// AllocationTimeout: a booking with no driver after this is unallocated
	// (and counted by Spampede).
	AllocationTimeout time.Duration
	// ScanEvery is how often open bookings are picked up again: retried,
	// expired, or resumed after a restart.
	ScanEvery time.Duration
	// RetryMin is how long a booking that found no driver waits before
	// it is tried again; each further miss doubles the wait, up to
	// RetryMax (each wait spread ±25 % by booking).
	RetryMin, RetryMax time.Duration
	// Workers allocate in the background; Queue bounds their backlog and
	// how many due bookings one scan claims.
	Workers, Queue int
	// ClaimHold is how long a claimed booking is kept from other scans
	// (of this or another instance) before it is due again if nothing
	// rescheduled it: longer than an advance takes (it bounds one), and no
	// longer than a partition lease, so that the bookings a crashed
	// instance had claimed are due again when its partitions are taken over.
	ClaimHold time.Duration
	// CountAt is when Spampede hears of a booking without a driver.
	CountAt CountAt
}

// CountAt is the moment a booking without a driver is counted by Spampede.
type CountAt string

const (
	// CountFirstMiss counts a booking when its first allocation attempt,
	// made as it is created, finds no driver: the filter reacts within
	// its threshold's worth of bookings, while a spike is still young.
	CountFirstMiss CountAt = "first-miss"
	// CountDeadline counts a booking when it gives up, AllocationTimeout
	// later: only final outcomes, but every booking admitted meanwhile
	// floods the pipeline first.
	CountDeadline CountAt = "deadline"
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{AllocationTimeout: 30 * time.Second, ScanEvery: time.Second, RetryMin: time.Second, RetryMax: 4 * time.Second,
		Workers: 4, Queue: 1024, ClaimHold: 5 * time.Second, CountAt: CountFirstMiss}
}

// Validate reports an unusable config.
func (c Config) Validate() error {
	if c.AllocationTimeout <= 0 || c.ScanEvery <= 0 || c.Workers < 1 || c.Queue < 1 || c.ClaimHold <= 0 {
		return errors.New("booking: allocation timeout, scan interval, workers, queue and claim hold must be positive")
	}
	if c.RetryMin <= 0 || c.RetryMax < c.RetryMin {
		return fmt.Errorf("booking: retry gaps must be positive with max ≥ min, got min %s max %s", c.RetryMin, c.RetryMax)
	}
	if c.CountAt != CountFirstMiss && c.CountAt != CountDeadline {
		return fmt.Errorf("booking: spampede count moment must be %s or %s, got %q", CountFirstMiss, CountDeadline, c.CountAt)
	}
	return nil
}

// Service runs the booking pipeline. Start it to run background allocation;
// Stop waits for its goroutines.
type Service struct {
	cfg      Config
	admit    Admitter
	alloc    Allocator
	store    Store
	driver   Drivers
	reserved Reservations // nil: no sweep
	shares   Shares
	log      *slog.Logger
	now      func() time.Time
	metrics  Metrics

	queue chan queued
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// NewService wires the pipeline; its workers claim the open bookings of
// the partitions sh owns. With rs non-nil, they also sweep lapsed
// reservations (see sweep).
// m may be nil (no metrics).
func NewService(cfg Config, a Admitter, al Allocator, s Store, d Drivers, rs Reservations, sh Shares, now func() time.Time, log *slog.Logger, m Metrics) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if sh == nil {
		return nil, errors.New("booking: no shares of the open index")
	}
	if m == nil {
		m = noMetrics{}
	}
	return &Service{cfg: cfg, admit: a, alloc: al, store: s, driver: d, reserved: rs, shares: sh, log: log, now: now, metrics: m,
		queue: make(chan queued, cfg.Queue), stop: make(chan struct{})}, nil
}

// queued is a booking for a worker: claimed by a scan until `until` (the
// end of the claim's hold, the entry's score meanwhile), or, with until
// zero, sent by a driver's answer.
type queued struct {
	id    string
	until time.Time
}

// ID is the booking ID for a rider's idempotency key: the same key always
// names the same booking, so a retry can only find it, never make another.
func ID(riderID, idemKey string) string {
	if idemKey == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return "bk-" + hex.EncodeToString(b[:])
	}
	sum := sha256.Sum256([]byte(riderID + "\x00" + idemKey))
	return "bk-" + hex.EncodeToString(sum[:12])
}

// Create runs the pipeline for a request: a retry with the same
// idempotency key returns the stored booking; Spampede may turn it away
// (HighDemandError) before anything is stored or any driver looked at;
// otherwise the booking is stored as searching and one allocation is tried
// at once; if it finds no driver, the workers try again, less and less
// often, until the allocation timeout.
func (s *Service) Create(ctx context.Context, req Request) (Booking, error) {
	if err := req.Validate(); err != nil {
		return Booking{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		// Bounded, so that the booking's first due time (below) is too.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.AllocationTimeout)
		defer cancel()
	}
	now, left := s.now(), timeLeft(ctx)
	id := ID(req.RiderID, req.IdempotencyKey)
	if req.IdempotencyKey != "" {
		if b, found, err := s.existing(ctx, id); err != nil || found {
			return b, err
		}
	}
	d := s.admit.Admit(ctx, req.Service, req.Pickup.Lat, req.Pickup.Lng, now)
	if !d.Admit() {
		s.metrics.Outcome(OutcomeTurnedAway)
		return Booking{}, &HighDemandError{RetryAfter: d.RetryAfter, Cell: d.Cell.String()}
	}
	// Due a claim hold after the request's deadline: if this process dies
	// during the first attempt, the scan takes the booking over then. Not
	// sooner: the store indexes the booking before it writes the record
	// (see Store.Create), and a scan that found the entry due before the
	// record was written would find no booking and forget the entry,
	// leaving a booking answered created searching for ever. By the
	// deadline the record is written or never will be.
	b := Booking{ID: id, RiderID: req.RiderID, Service: req.Service, Pickup: req.Pickup, Dropoff: req.Dropoff,
		Status: Searching, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(s.cfg.AllocationTimeout), DueAt: now.Add(left + s.cfg.ClaimHold)}
	stored, created, err := s.store.Create(ctx, b)
	if errors.Is(err, ErrUnconfirmed) {
		// The rider will hear it failed, so it must not go on: a failover
		// could lose it, and if none does it would be allocated later, a
		// ride for a rider who was told there is none. A retry with the
		// same key that found it meanwhile has kept it, and then it stays.
		wctx, cancel := detached(ctx)
		defer cancel()
		if werr := s.store.Withdraw(wctx, b); werr != nil {
			s.log.Warn("withdraw an unconfirmed booking", "booking", id, "err", werr)
		}
		return Booking{}, err
	}
	if err != nil || !created {
		return stored, err
	}
	s.metrics.Outcome(OutcomeCreated)
	next, err := s.tryAllocate(ctx, stored)
	if err == nil {
		return next, nil
	}
	if s.cfg.CountAt == CountFirstMiss && errors.Is(err, dispatch.ErrNoDriver) {
		// The booking is stored and will be retried: a failed count must not fail it.
		if err := s.admit.RecordMiss(context.WithoutCancel(ctx), req.Service, req.Pickup.Lat, req.Pickup.Lng, now); err != nil {
			s.log.Warn("spampede: count a booking without a driver", "booking", stored.ID, "err", err)
		}
	}
	s.reschedule(ctx, stored)
	return stored, nil
}

// existing is the booking an idempotent retry already created, if any. Most
// lookups find none (a storm's hotspot is mostly bookings turned away), so
// they cost one plain read; only one that finds a booking pays for keeping
// it (a confirmed write), since only then is something returned, and the
// attempt it retries may be about to withdraw it.
func (s *Service) existing(ctx context.Context, id string) (Booking, bool, error) {
	ok, err := s.store.Exists(ctx, id)
	if err != nil || !ok {
		return Booking{}, false, err
	}
	b, err := s.store.Keep(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Booking{}, false, nil // withdrawn since
	}
	return b, err == nil, err
}

// reschedule sets when a booking that found no driver is tried again.
// Best effort: if it fails, the booking is due again when its claim hold
// ends (a new one's: a hold after its create's deadline).
func (s *Service) reschedule(ctx context.Context, b Booking) {
	at := retryGap(b, s.now(), s.cfg.RetryMin, s.cfg.RetryMax)
	if err := s.store.Schedule(context.WithoutCancel(ctx), b.ID, at); err != nil {
		s.log.Debug("schedule a retry", "booking", b.ID, "err", err)
	}
}

// tryAllocate reserves a driver and records it on the booking. If the
// booking changed meanwhile, the reservation is released.
func (s *Service) tryAllocate(ctx context.Context, b Booking) (Booking, error) {
	now := s.now()
	driverID, until, err := s.alloc.Allocate(ctx, b.ID, b.Service, b.Pickup, now)
	if err != nil {
		return b, err
	}
	next, err := transition(b, Allocated, now)
	if err != nil {
		return b, err
	}
	next.DriverID, next.ReservedUntil, next.AllocatedAt, next.DueAt = driverID, until, now, until
	// The booking may name the driver only while the reservation holds:
	// once it has lapsed the sweep may free the driver for another
	// booking, and an update landing after that (an instance paused in
	// between, a hung primary holding it) would have two bookings name
	// one driver. The store's deadline guard makes it land by then or
	// never, whatever the caller's own deadline.
	left := until.Sub(s.now())
	if left <= 0 {
		// Lapsed already (this instance was held up): nothing was
		// written, so the driver is freed now rather than by the sweep.
		s.release(ctx, driverID, b.ID, until, now)
		return b, errLapsed
	}
	uctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	if err := s.store.Update(uctx, b, next); err != nil {
		// Only a compare-and-set that failed proves the booking does not
		// name the driver: then the reservation is released now. After any
		// other failure the update may have been applied, and releasing
		// the driver would let a second booking take a driver this one
		// holds; the reservation is left to lapse, and the sweep frees the
		// driver if the booking turns out not to hold it. This reservation
		// only: the driver may have declined it meanwhile (the conflict)
		// and been reserved again for the same booking by a worker.
		if errors.Is(err, ErrConflict) {
			s.release(ctx, driverID, b.ID, until, now)
		}
		return b, err
	}
	s.metrics.Outcome(OutcomeAllocated)
	return next, nil
}

// errLapsed: the reservation lapsed before the booking could record it.
var errLapsed = errors.New("the driver's reservation lapsed before the booking recorded it")

// release frees a driver from a reservation (ending at until) that its
// booking certainly does not name (never did, or no longer does: a
// cancel's written version names no driver), even when the caller has
// hung up (within its deadline).
func (s *Service) release(ctx context.Context, driverID, bookingID string, until, now time.Time) {
	rctx, cancel := detached(ctx)
	defer cancel()
	if err := s.driver.Release(rctx, driverID, bookingID, until, false, now); err != nil {
		s.log.Warn("release a driver the booking does not name", "driver", driverID, "booking", bookingID, "err", err)
	}
}

// enqueue hands q to the workers, unless their queue is full.
func (s *Service) enqueue(q queued) {
	select {
	case s.queue <- q:
	default: // the next scan picks it up
	}
}

// Get returns a booking.
func (s *Service) Get(ctx context.Context, id string) (Booking, error) {
	if err := driver.ValidateID(id); err != nil {
		return Booking{}, err
	}
	return s.store.Get(ctx, id)
}

// Wait returns the booking once its version differs from `seen`, or when
// ctx ends (then with the booking as it is). It is the long poll of
// GET /v1/bookings/{id}?wait=. With a store that is a Watcher it reads
// the booking once, then again only when told it changed (or that a
// change may have been missed); otherwise it polls. A watch that fails
// (a subscription that timed out on a busy node) is polled for a while,
// then tried again: one failure must not make a 30 s wait poll
// throughout, or a thousand waiters cost Redis a read every 100 ms each.
func (s *Service) Wait(ctx context.Context, id string, seen int64) (Booking, error) {
	if err := driver.ValidateID(id); err != nil {
		return Booking{}, err
	}
	w, ok := s.store.(Watcher)
	if !ok {
		b, _, err := s.poll(ctx, id, seen, nil)
		return b, err
	}
	backoff := rewatchMin
	lostQuickly := false // the last watch was lost as soon as made
	for {
		watch, err := w.Watch(ctx, id)
		if err == nil {
			made := time.Now()
			b, lost, werr := s.waitWatching(ctx, watch, id, seen)
			watch.Stop()
			if !lost {
				return b, werr
			}
			// A loss (a reconnect) is watched again at once; a second one
			// as soon as made (a subscription that cannot hold) is polled
			// a while, as a failed watch is, rather than spun on.
			quick := time.Since(made) < rewatchMin
			if !quick {
				backoff = rewatchMin
			}
			if !quick || !lostQuickly {
				lostQuickly = quick
				continue
			}
			lostQuickly, err = false, errLostAtOnce
		}
		if ctx.Err() != nil {
			return s.Get(context.WithoutCancel(ctx), id)
		}
		s.log.Debug("watch a booking; polling for a while instead", "booking", id, "err", err, "for", backoff)
		t := time.NewTimer(backoff)
		b, done, err := s.poll(ctx, id, seen, t.C)
		t.Stop()
		if done {
			return b, err
		}
		backoff = min(2*backoff, rewatchMax)
	}
}

// errLostAtOnce: a watch was lost as soon as it was made.
var errLostAtOnce = errors.New("the watch was lost as soon as it was made")

// A watch that failed is tried again after rewatchMin of polling, the
// wait doubling on each further failure up to rewatchMax.
const (
	rewatchMin = time.Second
	rewatchMax = 8 * time.Second
)

// waitWatching reads the booking, then again on each change signalled,
// until it moved past seen or ctx ends; lost: the watch was lost first.
func (s *Service) waitWatching(ctx context.Context, watch Watch, id string, seen int64) (b Booking, lost bool, err error) {
	for {
		b, err := s.Get(context.WithoutCancel(ctx), id)
		if err != nil || b.Version != seen || b.Status.Final() {
			return b, false, err
		}
		select {
		case <-ctx.Done():
			// Once more: a change whose message was lost is still seen.
			b, err := s.Get(context.WithoutCancel(ctx), id)
			return b, false, err
		case <-watch.Lost:
			return b, true, nil
		case <-watch.Changed:
		}
	}
}

// poll is Wait for a store that cannot watch: a read after 100 ms, the
// wait doubling up to pollMax, until the booking moved past seen or ctx
// ends (done), or until giveUp fires (not done: the caller watches again).
// The wait grows because polls come in crowds: while a shard's primary
// is down every waiter whose partition's channel it served polls, and
// each read is a confirmed one (a fence write and WAIT); at a steady
// 100 ms a thousand of them made ten thousand a second.
func (s *Service) poll(ctx context.Context, id string, seen int64, giveUp <-chan time.Time) (b Booking, done bool, err error) {
	wait := pollMin
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		b, err := s.Get(context.WithoutCancel(ctx), id)
		if err != nil || b.Version != seen || b.Status.Final() {
			return b, true, err
		}
		select {
		case <-ctx.Done():
			return b, true, nil
		case <-giveUp:
			return b, false, nil
		case <-t.C:
		}
		wait = min(2*wait, pollMax)
		t.Reset(wait)
	}
}

// A poll reads pollMin after the first read, the wait doubling to pollMax.
const (
	pollMin = 100 * time.Millisecond
	pollMax = time.Second
)

// Cancel cancels a booking that has no accepted driver yet, freeing a
// reserved driver. A booking cancelled already is answered as it is: a
// cancel sent again (its first answer lost, or a 503 although it landed)
// is done, not refused. One that changes under the cancel (a worker's
// write) is read again.
func (s *Service) Cancel(ctx context.Context, id string) (Booking, error) {
	for range casAttempts {
		b, err := s.Get(ctx, id)
		if err != nil || b.Status == Cancelled {
			return b, err
		}
		now := s.now()
		next, err := transition(b, Cancelled, now)
		if err != nil {
			return b, err
		}
		err = s.store.Update(ctx, b, next)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return b, err
		}
		s.metrics.Outcome(OutcomeCancelled)
		if b.DriverID != "" {
			// Detached: a rider hanging up now must not leave the driver
			// reserved for a cancelled booking until the sweep.
			s.release(ctx, b.DriverID, b.ID, b.ReservedUntil, now)
		}
		return next, nil
	}
	return Booking{}, fmt.Errorf("%w: booking %s changed %d times in a row", ErrChanging, id, casAttempts)
}

// cleanupTimeout bounds a step that must run although the request's own
// context may be done (withdrawing an unconfirmed booking, releasing a
// driver after a lost update), when the request had no deadline.
const cleanupTimeout = 2 * time.Second

// timeLeft is the time until ctx's deadline, which it has, or 0 if past.
func timeLeft(ctx context.Context) time.Duration {
	d, _ := ctx.Deadline()
	return max(time.Until(d), 0)
}

// detached is ctx without its cancellation (the client hanging up must not
// stop a cleanup) but with its deadline: a write the step sends lands by
// the request's deadline or never (the store's scripts refuse a late one).
// A deadline of its own, counted from now, would not do: an instance
// paused between the failure and the cleanup would withdraw, long after
// the client's deadline, a booking that the client's retry with the same
// key had found and been answered 201 for.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), d)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
