package booking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/spampede"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Fakes: the Redis store and the real filter/dispatch are tested on a real
// cluster elsewhere; these pin down the pipeline's own rules.

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type memStore struct {
	mu  sync.Mutex
	bks map[string]Booking
	due map[string]time.Time // the open index: open bookings by due time

	unconfirmed bool // Create stores, then reports ErrUnconfirmed
	// withdrawDeadline and updateDeadline are the last Withdraw's and
	// Update's context deadlines (zero: none).
	withdrawDeadline, updateDeadline time.Time
	failGet                          map[string]bool // Get of these fails, as an unreadable record would
	kept                             map[string]bool // kept by a retry: Withdraw leaves them
	// beforeRecord, if set, runs in Create between the index entry and the
	// record, as the Redis store writes them (two shards: a failover can
	// hold the record's write for seconds). Its re-index after the record
	// is best effort, and not modelled.
	beforeRecord func()
	// beforeUpdate, if set, runs at the start of each Update: what other
	// instances do while an update is in flight.
	beforeUpdate func(old, next Booking)
	// afterUpdate, if set, runs once an Update has been applied, before it
	// returns: what happens while its answer is on the way back.
	afterUpdate func(old, next Booking)
	// updateErr, if set, is what an applied Update answers (nil: done), as
	// a write the replicas did not confirm is answered ErrUnconfirmed.
	updateErr func(old, next Booking) error
}

func newMemStore() *memStore {
	return &memStore{bks: map[string]Booking{}, due: map[string]time.Time{}, kept: map[string]bool{}}
}

func (m *memStore) Create(_ context.Context, b Booking) (Booking, bool, error) {
	m.mu.Lock()
	if _, ok := m.bks[b.ID]; !ok {
		m.due[b.ID] = b.DueAt
	}
	if hook := m.beforeRecord; hook != nil {
		m.mu.Unlock()
		hook()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if old, ok := m.bks[b.ID]; ok {
		m.kept[b.ID] = true // as the store's retry path keeps it
		return old, false, nil
	}
	b.Version = 1
	m.bks[b.ID] = b
	if m.unconfirmed {
		return b, false, fmt.Errorf("store: %w", ErrUnconfirmed)
	}
	return b, true, nil
}

func (m *memStore) Get(_ context.Context, id string) (Booking, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failGet[id] {
		return Booking{}, errors.New("booking record: unreadable")
	}
	b, ok := m.bks[id]
	if !ok {
		return b, ErrNotFound
	}
	return b, nil
}

func (m *memStore) Keep(ctx context.Context, id string) (Booking, error) {
	b, err := m.Get(ctx, id)
	if err == nil {
		m.mu.Lock()
		m.kept[id] = true
		m.mu.Unlock()
	}
	return b, err
}

func (m *memStore) Exists(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.bks[id]
	return ok, nil
}

func (m *memStore) Update(ctx context.Context, old, next Booking) error {
	if hook := m.beforeUpdate; hook != nil {
		hook(old, next)
	}
	err := m.update(ctx, old, next)
	if hook := m.afterUpdate; hook != nil && err == nil {
		hook(old, next)
	}
	if answer := m.updateErr; answer != nil && err == nil {
		return answer(old, next)
	}
	return err
}

func (m *memStore) update(ctx context.Context, old, next Booking) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.updateDeadline, _ = ctx.Deadline()
	if err := ctx.Err(); err != nil {
		return err // past its deadline, as the store's guard refuses it
	}
	if m.bks[old.ID].Version != old.Version {
		return ErrConflict
	}
	next.Version = old.Version + 1
	m.bks[old.ID] = next
	if !next.Status.Open() {
		// As the Redis store: an accepted booking's entry goes only if
		// still due when its previous version was (it may reopen, and a
		// claim may have moved it); a final booking's whatever it is.
		was := old.DueAt
		if was.IsZero() {
			was = old.Deadline
		}
		if at, ok := m.due[old.ID]; next.Status.Final() || ok && at.UnixMilli() == was.UnixMilli() {
			delete(m.due, old.ID)
		}
	} else {
		m.due[old.ID] = next.DueAt
	}
	return nil
}

func (m *memStore) Claim(_ context.Context, _ []fleet.Lease, now time.Time, hold time.Duration, limit int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, at := range m.due {
		if !at.After(now) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return m.due[ids[i]].Before(m.due[ids[j]]) })
	ids = ids[:min(limit, len(ids))]
	for _, id := range ids {
		m.due[id] = now.Add(hold)
	}
	return ids, nil
}

func (m *memStore) Schedule(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.due[id]; ok {
		m.due[id] = at
	}
	return nil
}

func (m *memStore) Forget(_ context.Context, id string, due time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if at, ok := m.due[id]; ok && at.UnixMilli() == due.UnixMilli() {
		delete(m.due, id)
	}
	return nil
}

func (m *memStore) Withdraw(ctx context.Context, b Booking) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.withdrawDeadline, _ = ctx.Deadline()
	b.Version = 1 // as Create stored it: only that attempt's record goes
	if m.bks[b.ID] == b && !m.kept[b.ID] {
		delete(m.bks, b.ID)
		delete(m.due, b.ID)
	}
	return nil
}

type fakeAdmit struct {
	mu       sync.Mutex
	reject   bool
	recorded int
}

func (f *fakeAdmit) Admit(context.Context, string, float64, float64, time.Time) spampede.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reject {
		return spampede.Decision{Outcome: spampede.Rejected, RetryAfter: 30 * time.Second}
	}
	return spampede.Decision{Outcome: spampede.Admitted}
}

func (f *fakeAdmit) RecordUnallocated(context.Context, string, float64, float64, time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded++
	return nil
}

func (f *fakeAdmit) RecordMiss(ctx context.Context, service string, lat, lng float64, now time.Time) error {
	return f.RecordUnallocated(ctx, service, lat, lng, now)
}

// fakeFleet hands out free drivers, keeps their state through the real
// driver state machine, and records releases.
type fakeFleet struct {
	mu       sync.Mutex
	free     []string
	drivers  map[string]driver.Driver
	released []string
	calls    int
	ttl      time.Duration // a reservation's length; 0: 15 s
	reserved func()        // called once a driver is reserved; nil: nothing
	// acceptDeadline is the deadline the last accept was sent with.
	acceptDeadline time.Time
}

func (f *fakeFleet) Allocate(_ context.Context, bookingID string, _ string, _ driver.Location, now time.Time) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(f.free) == 0 {
		return "", time.Time{}, dispatch.ErrNoDriver
	}
	id := f.free[0]
	f.free = f.free[1:]
	ttl := f.ttl
	if ttl == 0 {
		ttl = 15 * time.Second
	}
	until := now.Add(ttl)
	f.drivers[id] = driver.Driver{ID: id, Status: driver.StatusReserved, BookingID: bookingID, ReservedUntil: until, Version: f.drivers[id].Version + 1}
	if f.reserved != nil {
		f.reserved()
	}
	return id, until, nil
}

// Release follows the adapter's contract: a driver that accepted is not
// released, nor one the booking has reserved again since the reservation
// until names (the driver state machine's rule, to the millisecond).
func (f *fakeFleet) Release(ctx context.Context, driverID, bookingID string, until time.Time, expired bool, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err // as the router: nothing is sent on a done context
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.drivers[driverID]
	if d.BookingID == bookingID && (d.Accepted || d.Status == driver.StatusOnTrip) && expired {
		return ErrDriverAccepted
	}
	f.released = append(f.released, fmt.Sprintf("%s expired=%v", driverID, expired))
	later := !until.IsZero() && until.UnixMilli() != d.ReservedUntil.UnixMilli()
	if d.BookingID == bookingID && d.Status == driver.StatusReserved && !later {
		f.drivers[driverID] = driver.Driver{ID: driverID, Status: driver.StatusAvailable, Version: d.Version + 1}
		f.free = append(f.free, driverID)
	}
	return nil
}

func (f *fakeFleet) Get(_ context.Context, id string) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.drivers[id]
	if !ok {
		return d, ErrDriverNotFound
	}
	return d, nil
}

func (f *fakeFleet) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tr.Event == driver.EventAccept {
		f.acceptDeadline, _ = ctx.Deadline()
	}
	d := f.drivers[id]
	next, err := driver.Apply(d, tr, now)
	if err != nil {
		return d, err
	}
	f.drivers[id] = next
	if next.Status == driver.StatusAvailable {
		f.free = append(f.free, id)
	}
	return next, nil
}

// acceptedByD1 is a booking created while d1 is free, and accepted by d1.
func (r *rig) acceptedByD1(t *testing.T) Booking {
	t.Helper()
	ctx := context.Background()
	b, _ := r.svc.Create(ctx, req("k"))
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err != nil {
		t.Fatalf("accept: %v", err)
	}
	return b
}

// afterNextDriverRead runs hook once, right after the service's next read
// of a driver.
func (r *rig) afterNextDriverRead(hook func()) {
	r.svc.driver = &getHook{fakeFleet: r.fleet, hook: hook}
}

// backOutD1 withdraws d1's accept of b, as a back-out's first step does.
func (r *rig) backOutD1(t *testing.T, b Booking) {
	t.Helper()
	d := r.fleet.status("d1")
	if _, err := r.fleet.Apply(context.Background(), "d1", driver.Transition{Event: driver.EventBackOut, BookingID: b.ID, Until: d.ReservedUntil}, r.clk.now()); err != nil {
		t.Fatal(err)
	}
}

// wantBackedOut checks that d1 backed out of b: d1 free, b searching.
func (r *rig) wantBackedOut(t *testing.T, b Booking) {
	t.Helper()
	got, _ := r.store.Get(context.Background(), b.ID)
	if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable || got.Status != Searching {
		t.Errorf("d1 is %s and the booking %s with %q; want d1 available and the booking searching", d.Status, got.Status, got.DriverID)
	}
}

// comesOnline makes id the only free driver, available.
func (f *fakeFleet) comesOnline(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free = []string{id}
	f.drivers[id] = driver.Driver{ID: id, Status: driver.StatusAvailable}
}

func (f *fakeFleet) status(id string) driver.Driver {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drivers[id]
}

type rig struct {
	svc     *Service
	store   *memStore
	admit   *fakeAdmit
	fleet   *fakeFleet
	clk     *clock
	metrics *fakeMetrics
}

// fakeMetrics records what Metrics hears.
type fakeMetrics struct {
	mu       sync.Mutex
	outcomes map[string]int
	overruns []time.Duration
}

func (m *fakeMetrics) Outcome(o string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[o]++
}

func (m *fakeMetrics) Overrun(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.overruns = append(m.overruns, d)
}

func (m *fakeMetrics) snapshot() (map[string]int, []time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.outcomes), slices.Clone(m.overruns)
}

func newRig(t *testing.T, drivers ...string) *rig {
	t.Helper()
	return newRigWith(t, func(*Config) {}, drivers...)
}

func newRigWith(t *testing.T, edit func(*Config), drivers ...string) *rig {
	t.Helper()
	fl := &fakeFleet{free: drivers, drivers: map[string]driver.Driver{}}
	for _, id := range drivers {
		fl.drivers[id] = driver.Driver{ID: id, Status: driver.StatusAvailable}
	}
	r := &rig{store: newMemStore(), admit: &fakeAdmit{}, fleet: fl, clk: &clock{t: time.Unix(1_800_000_000, 0)},
		metrics: &fakeMetrics{outcomes: map[string]int{}}}
	cfg := DefaultConfig()
	cfg.ScanEvery = 5 * time.Millisecond
	edit(&cfg)
	svc, err := NewService(cfg, r.admit, r.fleet, r.store, r.fleet, nil, fleet.Alone(1), r.clk.now, nil, r.metrics)
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r
}

func req(key string) Request {
	return Request{RiderID: "rider-1", Service: "car", Pickup: driver.Location{Lat: 1.3, Lng: 103.8}, Dropoff: driver.Location{Lat: 1.35, Lng: 103.9}, IdempotencyKey: key}
}

// eventually polls cond until it holds (the workers run on real tickers).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func TestCreateAllocatesAtOnceWhenADriverIsFree(t *testing.T) {
	r := newRig(t, "d1")
	b, err := r.svc.Create(context.Background(), req("k1"))
	if err != nil || b.Status != Allocated || b.DriverID != "d1" || b.Version != 2 {
		t.Fatalf("Create = %+v, %v; want allocated to d1 at version 2", b, err)
	}
}

func TestIdempotentRetryReturnsTheSameBooking(t *testing.T) {
	r := newRig(t, "d1", "d2")
	a, err := r.svc.Create(context.Background(), req("same"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.svc.Create(context.Background(), req("same"))
	if err != nil || b.ID != a.ID || b.DriverID != "d1" || len(r.store.bks) != 1 || r.fleet.calls != 1 {
		t.Fatalf("retry = %+v, %v; %d bookings, %d allocations; want the same booking, no new work", b, err, len(r.store.bks), r.fleet.calls)
	}
	c, _ := r.svc.Create(context.Background(), req("other"))
	if c.ID == a.ID {
		t.Errorf("another idempotency key gave the same booking")
	}
}

func TestHighDemandRejectsBeforeAnyDownstreamCall(t *testing.T) {
	r := newRig(t, "d1")
	r.admit.reject = true
	_, err := r.svc.Create(context.Background(), req("k"))
	var hd *HighDemandError
	if !errors.As(err, &hd) || hd.RetryAfter != 30*time.Second {
		t.Fatalf("Create = %v, want HighDemandError with retry 30s", err)
	}
	if len(r.store.bks) != 0 || r.fleet.calls != 0 {
		t.Errorf("a rejected booking reached the store (%d) or dispatch (%d)", len(r.store.bks), r.fleet.calls)
	}
}

// Spampede hears of a booking without a driver exactly once: when its
// first attempt misses (the default, so the filter reacts while a spike is
// young), or when it gives up at its deadline.
func TestABookingWithoutADriverIsCountedOnceForSpampede(t *testing.T) {
	for _, tt := range []struct {
		at                   CountAt
		atCreate, atDeadline int
	}{
		{CountFirstMiss, 1, 1},
		{CountDeadline, 0, 1},
	} {
		t.Run(string(tt.at), func(t *testing.T) {
			r := newRigWith(t, func(c *Config) { c.CountAt = tt.at })
			recorded := func() int { r.admit.mu.Lock(); defer r.admit.mu.Unlock(); return r.admit.recorded }
			r.svc.Start()
			defer r.svc.Stop()
			b, err := r.svc.Create(context.Background(), req("k"))
			if err != nil || b.Status != Searching {
				t.Fatalf("Create = %+v, %v; want searching", b, err)
			}
			if got := recorded(); got != tt.atCreate {
				t.Errorf("counted %d times when created, want %d", got, tt.atCreate)
			}
			r.clk.add(DefaultConfig().AllocationTimeout)
			eventually(t, "the booking is unallocated", func() bool {
				got, _ := r.svc.Get(context.Background(), b.ID)
				return got.Status == Unallocated
			})
			eventually(t, "spampede counted it", func() bool { return recorded() == tt.atDeadline })
			time.Sleep(20 * time.Millisecond) // a few more scans: no second count
			if got := recorded(); got != tt.atDeadline {
				t.Errorf("counted %d times in all, want %d", got, tt.atDeadline)
			}
		})
	}
}

// Metrics hear every outcome once, and how late past its deadline a
// booking without a driver was given up.
func TestMetricsHearEveryOutcome(t *testing.T) {
	r := newRig(t, "d1")
	ctx := context.Background()
	if _, err := r.svc.Create(ctx, req("allocated")); err != nil {
		t.Fatal(err)
	}
	r.admit.reject = true
	if _, err := r.svc.Create(ctx, req("turned-away")); err == nil {
		t.Fatal("not turned away")
	}
	r.admit.reject = false
	searching, err := r.svc.Create(ctx, req("searching")) // d1 is taken
	if err != nil || searching.Status != Searching {
		t.Fatalf("Create = %+v, %v", searching, err)
	}
	cancelled, err := r.svc.Create(ctx, req("cancelled"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	// Both open bookings past their deadline by 3 s: the searching one is
	// given up 3 s late; the allocated one's reservation lapsed on the way,
	// so it returns to searching now and is given up at once, not late.
	r.clk.add(DefaultConfig().AllocationTimeout + 3*time.Second)
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "both open bookings are unallocated", func() bool { o, _ := r.metrics.snapshot(); return o[OutcomeUnallocated] >= 2 })
	outcomes, overruns := r.metrics.snapshot()
	want := map[string]int{OutcomeCreated: 3, OutcomeAllocated: 1, OutcomeTurnedAway: 1, OutcomeCancelled: 1, OutcomeUnallocated: 2}
	if !maps.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
	slices.Sort(overruns)
	if len(overruns) != 2 || overruns[0] > time.Second || overruns[1] < 3*time.Second || overruns[1] > 4*time.Second {
		t.Errorf("overruns %v, want one under a second (the lapsed reservation) and one of about 3 s", overruns)
	}
}

func TestBookingsAllocatedAtOnceAreNotCounted(t *testing.T) {
	r := newRig(t, "d1")
	if b, err := r.svc.Create(context.Background(), req("k")); err != nil || b.Status != Allocated || b.AllocatedAt.IsZero() {
		t.Fatalf("Create = %+v, %v; want allocated, with its time", b, err)
	}
	if r.admit.recorded != 0 {
		t.Errorf("an allocated booking was counted %d times", r.admit.recorded)
	}
}

func TestWorkersAllocateWhenADriverFreesUp(t *testing.T) {
	r := newRig(t)
	r.svc.Start()
	defer r.svc.Stop()
	b, _ := r.svc.Create(context.Background(), req("k"))
	r.fleet.mu.Lock()
	r.fleet.free = []string{"late"}
	r.fleet.mu.Unlock()
	r.clk.add(DefaultConfig().RetryMin * 5 / 4) // past the first retry gap, however spread
	eventually(t, "allocated to the driver who came on line", func() bool {
		got, _ := r.svc.Get(context.Background(), b.ID)
		return got.Status == Allocated && got.DriverID == "late"
	})
}

func TestABookingWithoutADriverWaitsBeforeItIsTriedAgain(t *testing.T) {
	r := newRig(t)
	attempts := func() int { r.fleet.mu.Lock(); defer r.fleet.mu.Unlock(); return r.fleet.calls }
	if b, err := r.svc.Create(context.Background(), req("k")); err != nil || b.Status != Searching {
		t.Fatalf("Create = %+v, %v; want searching", b, err)
	}
	r.svc.Start()
	defer r.svc.Stop()
	scans := func() { time.Sleep(20 * r.svc.cfg.ScanEvery) }
	scans()
	if got := attempts(); got != 1 {
		t.Fatalf("%d attempts within the first retry gap, want only the one made at creation", got)
	}
	r.clk.add(DefaultConfig().RetryMin * 5 / 4)
	eventually(t, "tried again after the first gap", func() bool { return attempts() == 2 })
	scans()
	if got := attempts(); got != 2 {
		t.Errorf("%d attempts right after the second miss, want 2: the next gap is longer", got)
	}
}

func TestDriverResponses(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	r.fleet.drivers["someone-else"] = driver.Driver{ID: "someone-else", Status: driver.StatusAvailable}
	b, _ := r.svc.Create(ctx, req("k"))
	if _, err := r.svc.Respond(ctx, "someone-else", b.ID, time.Time{}, true); !errors.Is(err, driver.ErrIllegalTransition) {
		t.Errorf("accept by another driver = %v, want ErrIllegalTransition", err)
	}
	if _, err := r.svc.Respond(ctx, "d1", "", time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != Searching || got.DriverID != "" {
		t.Fatalf("after decline = %+v, want searching without a driver", got)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable {
		t.Fatalf("after decline the driver is %s, want available", d.Status)
	}
	r.fleet.comesOnline("d2")
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "re-allocated", func() bool { got, _ := r.svc.Get(ctx, b.ID); return got.Status == Allocated })
	got, _ := r.svc.Get(ctx, b.ID)
	if _, err := r.svc.Respond(ctx, got.DriverID, b.ID, time.Time{}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != Accepted {
		t.Fatalf("after accept = %s", got.Status)
	}
	if _, err := r.svc.Respond(ctx, got.DriverID, b.ID, time.Time{}, true); err != nil {
		t.Errorf("a repeated accept = %v, want it taken as done", err)
	}
	if _, err := r.svc.Cancel(ctx, b.ID); !errors.Is(err, ErrIllegal) {
		t.Errorf("cancel after accept = %v, want ErrIllegal", err)
	}
}

// A driver accepts, but the booking's update after the accept is lost: at
// the reservation's end the workers must find the booking accepted, not
// expire the driver's reservation and give the booking a second driver.
func TestAnAcceptWhoseBookingUpdateWasLostIsSettledAsAccepted(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1", "d2")
	b, _ := r.svc.Create(ctx, req("k"))
	if b.DriverID != "d1" {
		t.Fatalf("allocated to %q, want d1", b.DriverID)
	}
	// The driver's record takes the accept; the booking never hears of it.
	if _, err := r.fleet.Apply(ctx, "d1", driver.Transition{Event: driver.EventAccept, BookingID: b.ID}, r.clk.now()); err != nil {
		t.Fatal(err)
	}
	r.clk.add(16 * time.Second) // past the 15 s reservation
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "the booking is settled", func() bool { got, _ := r.svc.Get(ctx, b.ID); return got.Status != Allocated })
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != Accepted || got.DriverID != "d1" {
		t.Fatalf("booking = %s with %q, want accepted with d1", got.Status, got.DriverID)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusReserved || !d.Accepted {
		t.Errorf("d1 = %+v, want still reserved, accepted", d)
	}
}

// A decline lets the booking go before it frees the driver: at no moment
// do two bookings name one driver.
func TestADeclineFreesTheBookingBeforeTheDriver(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, _ := r.svc.Create(ctx, req("k"))
	failing := &failingApply{fakeFleet: r.fleet}
	r.svc.driver = failing
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err == nil {
		t.Fatal("the decline's driver update failed, but Respond reported success")
	}
	got, _ := r.svc.Get(ctx, b.ID)
	if got.Status != Searching || got.DriverID != "" {
		t.Fatalf("booking = %s with %q, want searching without a driver", got.Status, got.DriverID)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusReserved {
		t.Fatalf("d1 is %s, want still reserved: its decline failed", d.Status)
	}
}

// failingApply is a driver store whose transitions fail.
type failingApply struct{ *fakeFleet }

func (failingApply) Apply(context.Context, string, driver.Transition, time.Time) (driver.Driver, error) {
	return driver.Driver{}, errors.New("storage unavailable")
}

func TestExpiredReservationFreesTheDriverAndSearchesAgain(t *testing.T) {
	r := newRig(t, "d1")
	b, _ := r.svc.Create(context.Background(), req("k"))
	r.clk.add(16 * time.Second) // past the 15 s reservation
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "the driver was released as expired", func() bool {
		r.fleet.mu.Lock()
		defer r.fleet.mu.Unlock()
		return len(r.fleet.released) > 0 && r.fleet.released[0] == "d1 expired=true"
	})
	eventually(t, "the booking got a driver again", func() bool {
		got, _ := r.svc.Get(context.Background(), b.ID)
		return got.Status == Allocated && got.Version >= 4
	})
}

func TestCancelFreesTheReservedDriver(t *testing.T) {
	r := newRig(t, "d1")
	b, _ := r.svc.Create(context.Background(), req("k"))
	got, err := r.svc.Cancel(context.Background(), b.ID)
	if err != nil || got.Status != Cancelled || len(r.fleet.released) != 1 {
		t.Fatalf("Cancel = %+v, %v; releases %v", got, err, r.fleet.released)
	}
}

// A cancel sent again (its first answer lost, or a 503 although it
// landed) is answered with the cancelled booking, not refused as illegal:
// the rider's app cannot tell "my cancel landed" from "it cannot be
// cancelled" otherwise (a reviewer's finding). The driver is released once.
func TestACancelSentAgainIsAnsweredDone(t *testing.T) {
	r := newRig(t, "d1")
	b, _ := r.svc.Create(context.Background(), req("k"))
	first, err := r.svc.Cancel(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.svc.Cancel(context.Background(), b.ID)
	if err != nil || again.Status != Cancelled || again.Version != first.Version {
		t.Fatalf("Cancel again = %s v%d, %v; want the cancelled booking, v%d", again.Status, again.Version, err, first.Version)
	}
	if len(r.fleet.released) != 1 {
		t.Errorf("releases %v, want one", r.fleet.released)
	}
	r.metrics.mu.Lock()
	defer r.metrics.mu.Unlock()
	if n := r.metrics.outcomes[OutcomeCancelled]; n != 1 {
		t.Errorf("cancellations counted %d times, want once", n)
	}
}

// Only a compare-and-set that wrote nothing is tried again: a cancel whose
// write may have landed unconfirmed is answered so (a 503: it may or may
// not have happened), not read back and answered done, which a failover
// could undo, and its driver is not released.
func TestACancelWhoseWriteIsUnconfirmedIsNotTriedAgain(t *testing.T) {
	r := newRig(t, "d1")
	b, _ := r.svc.Create(context.Background(), req("k"))
	r.store.updateErr = func(_, next Booking) error {
		if next.Status == Cancelled {
			return ErrUnconfirmed
		}
		return nil
	}
	if got, err := r.svc.Cancel(context.Background(), b.ID); !errors.Is(err, ErrUnconfirmed) {
		t.Fatalf("Cancel = %s, %v; want ErrUnconfirmed", got.Status, err)
	}
	if len(r.fleet.released) != 0 {
		t.Errorf("releases %v after an unconfirmed cancel, want none", r.fleet.released)
	}
}

// A cancel whose compare-and-set meets a concurrent change (a worker's
// write of the booking) reads the booking again and cancels it, rather
// than answering the rider with a conflict.
func TestACancelMeetingAConcurrentChangeReadsAgain(t *testing.T) {
	r := newRig(t) // no driver: the booking stays searching
	b, _ := r.svc.Create(context.Background(), req("k"))
	changed := false
	r.store.beforeUpdate = func(old, next Booking) {
		if changed || next.Status != Cancelled {
			return
		}
		changed = true
		moved := old
		moved.DueAt = old.DueAt.Add(time.Second) // a worker's reschedule
		if err := r.store.update(context.Background(), old, moved); err != nil {
			t.Error(err)
		}
	}
	got, err := r.svc.Cancel(context.Background(), b.ID)
	if err != nil || got.Status != Cancelled {
		t.Fatalf("Cancel = %s, %v; want cancelled", got.Status, err)
	}
}

// A rider's app that hangs up once the cancel's booking write is out must
// not leave the driver reserved for a cancelled booking until the sweep:
// the release runs detached from the request's cancellation, as every
// other cleanup does (a reviewer's finding: it ran on the request's
// context, and the fleet's Release, as the router, refused a done one).
func TestACancelFreesTheDriverAfterTheRiderHangsUp(t *testing.T) {
	r := newRig(t, "d1")
	b, _ := r.svc.Create(context.Background(), req("k"))
	ctx, hangUp := context.WithTimeout(context.Background(), 5*time.Second)
	defer hangUp()
	r.store.afterUpdate = func(_, next Booking) {
		if next.Status == Cancelled {
			hangUp() // the write landed; the client is gone
		}
	}
	got, err := r.svc.Cancel(ctx, b.ID)
	if err != nil || got.Status != Cancelled {
		t.Fatalf("Cancel = %s, %v", got.Status, err)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable {
		t.Fatalf("the booking is cancelled, but d1 is %s for %q until %s", d.Status, d.BookingID, d.ReservedUntil)
	}
}

// A booking whose create is held between its index entry and its record
// (the record's primary failing over) is not forgotten by a scan that
// finds the entry due meanwhile: the entry comes due only once the
// create's deadline has passed, by when the record is written or never
// will be. Before, it came due a claim hold after the create began; a scan
// then found no record, forgot the entry, and the booking, answered
// created, stayed searching for ever (a CI run of
// TestAPrimaryFailoverDuringConcurrentReservationsNeverHoldsADriverTwice).
func TestABookingIsNotForgottenWhileItsRecordIsBeingWritten(t *testing.T) {
	const timeout = 5 * time.Second
	r := newRigWith(t, func(c *Config) { c.ClaimHold = 2 * time.Second }) // no driver: the booking stays searching
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r.store.beforeRecord = func() {
		// The failover the record's write waits out: past the claim hold,
		// within the create's deadline (a write after it is refused).
		r.clk.add(r.svc.cfg.ClaimHold + time.Second)
		now := r.clk.now()
		ids, err := r.store.Claim(ctx, nil, now, r.svc.cfg.ClaimHold, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids { // as a worker does
			if err := r.svc.advance(ctx, queued{id: id, until: now.Add(r.svc.cfg.ClaimHold)}); err != nil {
				t.Errorf("advance %s: %v", id, err)
			}
		}
	}
	b, err := r.svc.Create(ctx, req("k"))
	if err != nil {
		t.Fatal(err)
	}
	if left := timeLeft(ctx); b.DueAt.Before(b.CreatedAt.Add(left + r.svc.cfg.ClaimHold)) {
		t.Errorf("due %s after its creation, want at least the %s left of the create's deadline and a claim hold (%s)",
			b.DueAt.Sub(b.CreatedAt), left, r.svc.cfg.ClaimHold)
	}
	r.store.mu.Lock()
	_, indexed := r.store.due[b.ID]
	r.store.mu.Unlock()
	if !indexed {
		t.Fatalf("booking %s (%s) answered created is in no index: no worker will ever advance it", b.ID, b.Status)
	}
}

func TestOpenBookingsAreResumedByANewProcess(t *testing.T) {
	first := newRig(t)
	b, _ := first.svc.Create(context.Background(), req("k"))
	// The first process stops without finishing; a second one starts on the same store.
	second := newRig(t, "d9")
	second.store = first.store
	second.svc.store = first.store
	second.clk.add(2 * DefaultConfig().RetryMin) // past the retry the first process scheduled
	second.svc.Start()
	defer second.svc.Stop()
	eventually(t, "resumed and allocated", func() bool {
		got, _ := second.svc.Get(context.Background(), b.ID)
		return got.Status == Allocated && got.DriverID == "d9"
	})
}

func TestRequestValidation(t *testing.T) {
	bad := []Request{
		{RiderID: "", Service: "car"},
		{RiderID: "r", Service: "CAR!", Pickup: driver.Location{Lat: 1, Lng: 1}},
		{RiderID: "r", Service: "car", Pickup: driver.Location{Lat: 91, Lng: 1}},
		{RiderID: "r", Service: "car", IdempotencyKey: string(make([]byte, 200))},
	}
	for i, r := range bad {
		if err := r.Validate(); !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("request %d: Validate = %v, want ErrInvalidArgument", i, err)
		}
	}
	if err := req("k").Validate(); err != nil {
		t.Errorf("a good request: %v", err)
	}
}

// A create the store could not confirm (no replica acknowledged it) is
// reported as failed, so the booking must never go on: it is withdrawn,
// not allocated then or later. The withdraw runs to the request's
// deadline, not past it: a withdraw that landed later would delete the
// booking a retry with the same key, sent once the client's deadline had
// passed, found and was answered 201 for (a review found that a deadline
// of the withdraw's own, counted from the failure, allowed it when the
// instance was paused in between).
func TestAnUnconfirmedCreateIsWithdrawnAndNeverAllocated(t *testing.T) {
	r := newRig(t, "d1")
	r.store.unconfirmed = true
	deadline := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := r.svc.Create(ctx, req("k")); !errors.Is(err, ErrUnconfirmed) {
		t.Fatalf("Create = %v, want ErrUnconfirmed", err)
	}
	if !r.store.withdrawDeadline.Equal(deadline) {
		t.Errorf("the withdraw ran to %v, want the request's deadline %v: it could land after the client's retry", r.store.withdrawDeadline, deadline)
	}
	r.svc.Start()
	defer r.svc.Stop()
	r.clk.add(time.Minute)
	time.Sleep(20 * r.svc.cfg.ScanEvery)
	r.store.mu.Lock()
	stored, indexed := len(r.store.bks), len(r.store.due)
	r.store.mu.Unlock()
	if stored != 0 || indexed != 0 || r.fleet.calls != 0 {
		t.Errorf("after an unconfirmed create: %d bookings stored, %d indexed, %d allocations; want none", stored, indexed, r.fleet.calls)
	}
}

// A retry that finds its booking and reports it keeps it first: the
// attempt it retries, unconfirmed, may still be about to withdraw it, and
// must then leave it (G3). Here the first attempt's create has stored the
// booking and its withdrawal comes after the retry's answer.
func TestARetryKeepsTheBookingItReportsFromItsFirstAttemptsWithdrawal(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.store.unconfirmed = true
	if _, err := r.svc.Create(ctx, req("k")); !errors.Is(err, ErrUnconfirmed) {
		t.Fatalf("first attempt = %v, want ErrUnconfirmed", err)
	}
	// Its withdrawal has not run yet: put back what its create stored.
	id := ID("rider-1", "k")
	r.store.mu.Lock()
	r.store.unconfirmed = false
	first := Booking{ID: id, RiderID: "rider-1", Status: Searching, Version: 1}
	r.store.bks[id] = first
	r.store.mu.Unlock()
	got, err := r.svc.Create(ctx, req("k"))
	if err != nil || got.ID != id {
		t.Fatalf("retry = %+v, %v; want the stored booking", got, err)
	}
	if err := r.store.Withdraw(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Get(ctx, id); err != nil {
		t.Fatalf("after the first attempt's late withdrawal, Get = %v; want the booking the retry reported", err)
	}
}

// A booking whose advance keeps failing must not keep the others from
// being advanced, however small the scan.
func TestABookingThatCannotBeAdvancedDoesNotHoldUpTheOthers(t *testing.T) {
	r := newRigWith(t, func(c *Config) { c.Queue = 1 })
	ctx := context.Background()
	poison, _ := r.svc.Create(ctx, req("poison"))
	r.clk.add(time.Millisecond) // the other booking is due later
	other, _ := r.svc.Create(ctx, req("other"))
	r.store.mu.Lock()
	r.store.failGet = map[string]bool{poison.ID: true}
	r.store.mu.Unlock()
	r.fleet.comesOnline("late")
	r.clk.add(5 * time.Second) // both are due
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "the other booking got the driver", func() bool {
		got, _ := r.svc.Get(ctx, other.ID)
		return got.Status == Allocated
	})
}

// fakeReservations is a reserved-drivers index: the drivers it lists as
// lapsed, once.
type fakeReservations struct {
	mu     sync.Mutex
	lapsed []driver.Driver
	err    error // returned with the lapsed: parts of the index unread
}

func (f *fakeReservations) ClaimLapsed(context.Context, time.Time, time.Duration, int) ([]driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.lapsed
	f.lapsed = nil
	return out, f.err
}

// The index is spread over every shard, so while one primary is down
// some of it cannot be read: what the rest gave is swept all the same.
func TestTheSweepFreesWhatTheReadablePartOfTheIndexGives(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	d := driver.Driver{ID: "d-orphan", Status: driver.StatusReserved, BookingID: "bk-never-saved", ReservedUntil: r.clk.now().Add(-time.Minute)}
	r.fleet.mu.Lock()
	r.fleet.drivers[d.ID] = d
	r.fleet.mu.Unlock()
	r.svc.reserved = &fakeReservations{lapsed: []driver.Driver{d}, err: errors.New("1 of 33 partitions of the reserved-drivers index unread")}
	r.svc.sweep(ctx)
	if got := r.fleet.status(d.ID).Status; got != driver.StatusAvailable {
		t.Errorf("%s is %s after the sweep, want available", d.ID, got)
	}
}

// The sweep frees a lapsed reservation no booking holds, and only those.
func TestTheSweepFreesLapsedReservationsNoBookingHolds(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	t0 := r.clk.now()
	lapsedAt := t0.Add(-time.Minute)
	held, _ := r.svc.Create(ctx, req("held"))
	cancelled, _ := r.svc.Create(ctx, req("cancelled"))
	if _, err := r.svc.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	// Allocated to d-held in the store, its driver accepted: it holds it.
	b, _ := r.store.Get(ctx, held.ID)
	next, _ := transition(b, Allocated, t0)
	next.DriverID, next.ReservedUntil = "d-held", lapsedAt
	if err := r.store.Update(ctx, b, next); err != nil {
		t.Fatal(err)
	}
	reserved := func(id, bk string, accepted bool) driver.Driver {
		return driver.Driver{ID: id, Status: driver.StatusReserved, BookingID: bk, ReservedUntil: lapsedAt, Accepted: accepted}
	}
	r.fleet.mu.Lock()
	for _, d := range []driver.Driver{
		reserved("d-held", held.ID, true),             // held: left alone
		reserved("d-orphan", "bk-never-saved", false), // no booking: expired
		reserved("d-cancelled", cancelled.ID, true),   // its booking was cancelled: declined
	} {
		r.fleet.drivers[d.ID] = d
	}
	r.fleet.mu.Unlock()
	rs := &fakeReservations{lapsed: []driver.Driver{r.fleet.status("d-held"), r.fleet.status("d-orphan"), r.fleet.status("d-cancelled")}}
	r.svc.reserved = rs
	r.svc.sweep(ctx)
	for id, want := range map[string]driver.Status{"d-held": driver.StatusReserved, "d-orphan": driver.StatusAvailable, "d-cancelled": driver.StatusAvailable} {
		if got := r.fleet.status(id).Status; got != want {
			t.Errorf("%s is %s after the sweep, want %s", id, got, want)
		}
	}
}

// When a reservation lapses, the booking lets go of its driver before the
// driver is freed: no second booking can reserve a driver the first one
// still names.
func TestALapsedReservationLeavesTheBookingBeforeTheDriverIsFreed(t *testing.T) {
	r := newRig(t, "d1")
	b, _ := r.svc.Create(context.Background(), req("k"))
	check := &releaseWatch{fakeFleet: r.fleet, store: r.store}
	r.svc.driver = check
	r.clk.add(16 * time.Second) // past the 15 s reservation
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "the driver was released", func() bool { check.mu.Lock(); defer check.mu.Unlock(); return check.released > 0 })
	check.mu.Lock()
	defer check.mu.Unlock()
	if check.stillNamed > 0 {
		t.Errorf("the driver was freed %d times while booking %s still named it", check.stillNamed, b.ID)
	}
}

// releaseWatch counts releases of a driver its booking still names.
type releaseWatch struct {
	*fakeFleet
	store *memStore

	mu                   sync.Mutex
	released, stillNamed int
}

func (w *releaseWatch) Release(ctx context.Context, driverID, bookingID string, until time.Time, expired bool, now time.Time) error {
	b, _ := w.store.Get(ctx, bookingID)
	w.mu.Lock()
	w.released++
	if b.Status == Allocated && b.DriverID == driverID {
		w.stillNamed++
	}
	w.mu.Unlock()
	return w.fakeFleet.Release(ctx, driverID, bookingID, until, expired, now)
}

// A driver declines a reservation whose booking does not name it yet: the
// allocation's booking update is still in flight. That update must then
// fail (and release the driver), or the booking would name a driver who is
// free for any other booking. Found by apollo verify on two instances.
func TestADeclineBeforeTheBookingNamesItsDriverStopsTheAllocationNamingIt(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	b, _ := r.svc.Create(ctx, req("k")) // no driver free: searching, version 1
	// The allocation has reserved d1 for the booking, its update is in flight.
	r.fleet.mu.Lock()
	r.fleet.drivers["d1"] = driver.Driver{ID: "d1", Status: driver.StatusReserved, BookingID: b.ID, ReservedUntil: r.clk.now().Add(15 * time.Second), Version: 2}
	r.fleet.mu.Unlock()
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable {
		t.Fatalf("d1 is %s after its decline, want available", d.Status)
	}
	named, _ := transition(b, Allocated, r.clk.now())
	named.DriverID = "d1"
	if err := r.store.Update(ctx, b, named); !errors.Is(err, ErrConflict) {
		t.Fatalf("the in-flight allocation update = %v, want ErrConflict: the booking would name d1, who declined", err)
	}
}

// newSearchingThenD1Free is a rig with a booking created while no driver
// was free (searching), and driver d1 free since.
func newSearchingThenD1Free(t *testing.T) (*rig, Booking) {
	t.Helper()
	r := newRig(t)
	b, _ := r.svc.Create(context.Background(), req("k"))
	r.fleet.comesOnline("d1")
	return r, b
}

// A driver declines while the allocation's booking update is in flight;
// a worker then allocates the booking again, and reserves the same driver
// (the nearest still). The first allocation's update conflicts, and the
// release that follows must end its own reservation only: a release of
// the booking's reservation, whichever it was, freed the second one while
// the booking named the driver, and a second booking took it (G2). Found
// by a reviewer reading the code.
func TestALateReleaseOfAnAllocationNeverFreesItsBookingsNextReservation(t *testing.T) {
	ctx := context.Background()
	r, b := newSearchingThenD1Free(t)
	inFlight := true
	r.store.beforeUpdate = func(_, next Booking) {
		if !inFlight || next.Status != Allocated {
			return
		}
		inFlight = false
		r.clk.add(50 * time.Millisecond) // the offer reaches the driver
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
			t.Fatalf("decline: %v", err)
		}
		r.clk.add(50 * time.Millisecond)
		if err := r.svc.advance(ctx, <-r.svc.queue); err != nil { // a worker, at once
			t.Fatalf("the worker's advance: %v", err)
		}
	}
	if _, err := r.svc.tryAllocate(ctx, b); !errors.Is(err, ErrConflict) {
		t.Fatalf("the first allocation = %v, want ErrConflict (the driver declined)", err)
	}
	got, _ := r.store.Get(ctx, b.ID)
	if got.Status != Allocated || got.DriverID != "d1" {
		t.Fatalf("booking %s with %q, want allocated with d1 by the worker", got.Status, got.DriverID)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusReserved || d.BookingID != b.ID {
		other, err := r.svc.Create(ctx, req("k2"))
		t.Fatalf("d1 is %s (for %q) while its booking names it; a second booking then got %q (%s, %v)",
			d.Status, d.BookingID, other.DriverID, other.Status, err)
	}
}

// heldDecline holds the first decline sent to the driver store until
// proceed is closed, after telling entered: a driver's decline held up
// between letting its booking go and freeing the driver.
type heldDecline struct {
	*fakeFleet
	entered, proceed chan struct{}
	once             sync.Once
}

func (h *heldDecline) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	if tr.Event == driver.EventDecline {
		h.once.Do(func() {
			close(h.entered)
			<-h.proceed
		})
	}
	return h.fakeFleet.Apply(ctx, id, tr, now)
}

// The driver's own decline names the reservation it answers too: held up
// after its booking let go (an allocation's update then conflicted, the
// allocation released the driver, and a worker reserved the same driver
// again for the booking and recorded it), it landed on the booking's next
// reservation and freed the driver while the booking named it. A reviewer
// found it.
func TestADriversLateDeclineNeverFreesItsBookingsNextReservation(t *testing.T) {
	ctx := context.Background()
	r, b := newSearchingThenD1Free(t)
	held := &heldDecline{fakeFleet: r.fleet, entered: make(chan struct{}), proceed: make(chan struct{})}
	r.svc.driver = held
	inFlight := true
	declined := make(chan error, 1)
	r.store.beforeUpdate = func(_, next Booking) {
		if !inFlight || next.Status != Allocated {
			return
		}
		inFlight = false
		r.clk.add(50 * time.Millisecond)
		go func() { _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); declined <- err }()
		select {
		case <-held.entered: // the booking let go; the driver's decline is held up
		case err := <-declined:
			t.Fatalf("the decline returned (%v) before its driver step", err)
		}
	}
	if _, err := r.svc.tryAllocate(ctx, b); !errors.Is(err, ErrConflict) {
		t.Fatalf("the first allocation = %v, want ErrConflict (the driver declined)", err)
	}
	r.clk.add(50 * time.Millisecond)
	if err := r.svc.advance(ctx, queued{id: b.ID}); err != nil {
		t.Fatalf("the worker's advance: %v", err)
	}
	if got, _ := r.store.Get(ctx, b.ID); got.Status != Allocated || got.DriverID != "d1" {
		t.Fatalf("booking %s with %q, want allocated with d1 by the worker", got.Status, got.DriverID)
	}
	close(held.proceed)
	err := <-declined
	if d := r.fleet.status("d1"); d.Status != driver.StatusReserved || d.BookingID != b.ID {
		other, cerr := r.svc.Create(ctx, req("k2"))
		t.Fatalf("the late decline (%v) left d1 %s while its booking names it; a second booking then got %q (%s, %v)",
			err, d.Status, other.DriverID, other.Status, cerr)
	}
	if !errors.Is(err, driver.ErrWrongBooking) {
		t.Errorf("the late decline = %v, want ErrWrongBooking: the reservation it answered is over", err)
	}
}

// A decline that names the reservation it answers (the driver's
// reserved_until, as its app showed it), sent again after its first
// answer was lost, once a worker has reserved the same driver for the
// same booking again, is refused: the app never saw the new reservation,
// and the decline must not end it. Without the reservation named it would
// end it and be answered done (README, Known limits, until 2026-12-06).
func TestADeclineNamingAnEarlierReservationLeavesTheLaterOne(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, err := r.svc.Create(ctx, req("k"))
	if err != nil || b.Status != Allocated || b.DriverID != "d1" {
		t.Fatalf("create = %+v, %v; want allocated to d1", b, err)
	}
	first := b.ReservedUntil
	if _, err := r.svc.Respond(ctx, "d1", b.ID, first, false); err != nil {
		t.Fatalf("the decline = %v", err)
	}
	r.clk.add(time.Second)
	if err := r.svc.advance(ctx, queued{id: b.ID}); err != nil {
		t.Fatalf("the worker's advance: %v", err)
	}
	again, _ := r.store.Get(ctx, b.ID)
	if again.Status != Allocated || again.DriverID != "d1" || again.ReservedUntil.Equal(first) {
		t.Fatalf("booking %s with %q until %v, want allocated to d1 again, under a new reservation", again.Status, again.DriverID, again.ReservedUntil)
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, first, false); !errors.Is(err, driver.ErrWrongReservation) {
		t.Errorf("the decline sent again = %v, want driver.ErrWrongReservation", err)
	}
	if got, _ := r.store.Get(ctx, b.ID); got.Status != Allocated || got.DriverID != "d1" || !got.ReservedUntil.Equal(again.ReservedUntil) {
		t.Errorf("booking %s with %q until %v after the decline sent again, want it left allocated to d1 until %v", got.Status, got.DriverID, got.ReservedUntil, again.ReservedUntil)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusReserved || !d.ReservedUntil.Equal(again.ReservedUntil) {
		t.Errorf("d1 %s until %v, want still reserved until %v", d.Status, d.ReservedUntil, again.ReservedUntil)
	}
	// The accept of the earlier reservation is refused too; of the later
	// one, taken.
	if _, err := r.svc.Respond(ctx, "d1", b.ID, first, true); !errors.Is(err, driver.ErrWrongReservation) {
		t.Errorf("an accept of the earlier reservation = %v, want driver.ErrWrongReservation", err)
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, again.ReservedUntil, true); err != nil {
		t.Errorf("an accept of the later reservation = %v", err)
	}
	if got, _ := r.store.Get(ctx, b.ID); got.Status != Accepted {
		t.Errorf("booking %s, want accepted", got.Status)
	}
}

// A driver who accepted can still back out with a decline, and is freed:
// an accepted reservation does not expire, and once it has lapsed the
// trip cannot start, so a decline is its only way out (a review found
// that refusing it, to keep the accepted booking's driver, stranded the
// driver for good). The booking searches again
// (TestADriverWhoBacksOutOfAnAcceptedBookingSendsItSearchingAgain).
func TestADriverWhoAcceptedCanStillBackOut(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	r.clk.add(16 * time.Second) // the reservation (15 s) lapses before the trip starts
	if _, err := r.svc.StartTrip(ctx, "d1", b.ID); err == nil {
		t.Fatal("a trip started on a lapsed reservation")
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
		t.Fatalf("the decline after the lapse = %v, want done", err)
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable {
		t.Errorf("d1 is %s after backing out, want available", d.Status)
	}
}

// A driver who backs out of a booking it accepted gives the booking back:
// the booking searches again, and is given up at its deadline as any
// search is. Before, an accepted booking was final: it went on naming a
// driver who was free, and reserved by other bookings, while its rider
// waited for a car that was not coming.
func TestADriverWhoBacksOutOfAnAcceptedBookingSendsItSearchingAgain(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		after time.Duration // from the accept to the decline
		want  Status        // once the workers looked at it
	}{
		{"before its deadline, another driver is found", time.Second, Allocated},
		{"past its deadline, it is given up", DefaultConfig().AllocationTimeout + time.Minute, Unallocated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "d1")
			b := r.acceptedByD1(t)
			r.clk.add(tt.after)
			if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
				t.Fatalf("the decline after the accept = %v, want done", err)
			}
			if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable {
				t.Errorf("d1 is %s after backing out, want available", d.Status)
			}
			got, _ := r.store.Get(ctx, b.ID)
			if got.Status != Searching || got.DriverID != "" || got.Version != b.Version+2 {
				t.Fatalf("after the driver backed out the booking is %s with %q at version %d, want searching with no driver at version %d",
					got.Status, got.DriverID, got.Version, b.Version+2)
			}
			r.fleet.comesOnline("d2")
			r.svc.Start()
			defer r.svc.Stop()
			eventually(t, "the booking is "+string(tt.want), func() bool {
				got, _ := r.svc.Get(ctx, b.ID)
				return got.Status == tt.want
			})
			if got, _ := r.svc.Get(ctx, b.ID); got.Status == Allocated && got.DriverID != "d2" {
				t.Errorf("allocated to %q, want d2", got.DriverID)
			}
		})
	}
}

// A decline held up (an instance paused, a double tap) from a driver's
// first acceptance of a booking lands after the driver backed out, was
// reserved again for the same booking and accepted it again: it names the
// first reservation, so it changes nothing. Before, the booking step took
// any accepted booking naming the driver back to searching, the driver
// step was then refused (another reservation), and the driver stayed
// reserved and accepted for a booking that was looking for someone else
// (a reviewer found it, 2026-12-06).
func TestAHeldDeclineNeverUndoesALaterAcceptanceOfTheSameBooking(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	held := false
	r.store.beforeUpdate = func(old, next Booking) {
		if held || old.Status != Accepted || next.Status != Searching {
			return
		}
		held = true // the first decline is held here; its twin goes through
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
			t.Errorf("back out: %v", err)
		}
		r.clk.add(time.Second)
		if err := r.svc.advance(ctx, queued{id: b.ID}); err != nil { // d1, free, is reserved again
			t.Errorf("advance: %v", err)
		}
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err != nil {
			t.Errorf("accept again: %v", err)
		}
	}
	_, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false)
	r.store.beforeUpdate = nil
	if !errors.Is(err, driver.ErrWrongBooking) {
		t.Errorf("the held decline = %v, want ErrWrongBooking", err)
	}
	got, _ := r.store.Get(ctx, b.ID)
	if d := r.fleet.status("d1"); got.Status != Accepted || got.DriverID != "d1" || !d.Accepted || d.BookingID != b.ID {
		t.Errorf("after the held decline the booking is %s with %q and d1 is %s (accepted %t) for %q; want both still accepted",
			got.Status, got.DriverID, d.Status, d.Accepted, d.BookingID)
	}
}

// A driver's start_trip that reaches its record while its own back-out
// runs (its app gave up on the decline, or sent both at once) is refused:
// the back-out withdraws the accept before the booking lets go. Before,
// the trip started between the booking's step and the driver's, the
// back-out was then refused, and the booking, searching, took a second
// driver for a rider already on the way (a reviewer found it, 2026-12-06).
func TestATripCannotStartWhileItsDriverBacksOut(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	var started error
	r.store.beforeUpdate = func(old, next Booking) {
		if old.Status == Accepted && next.Status == Searching {
			r.store.beforeUpdate = nil
			_, started = r.svc.StartTrip(ctx, "d1", b.ID)
		}
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
		t.Fatalf("the back-out = %v, want done", err)
	}
	if started == nil {
		t.Error("a trip started while its driver backed out")
	}
	r.wantBackedOut(t, b)
}

// An instance that stopped after withdrawing a driver's accept (the
// back-out's first step) leaves the driver reserved for a booking still
// accepted with it. The sweep, once the reservation lapsed, finishes the
// back-out: the booking lets go, then the driver is freed. Without it the
// accepted booking would hold the driver for ever (an accepted booking
// holds its driver, so the sweep left it alone).
func TestTheSweepFinishesABackOutThatStoppedHalfWay(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	r.backOutD1(t, b)
	r.clk.add(time.Minute)
	r.svc.reserved = &fakeReservations{lapsed: []driver.Driver{r.fleet.status("d1")}}
	r.svc.sweep(ctx)
	r.wantBackedOut(t, b)
}

// getHook runs hook once, right after the next driver read: as an
// instance paused between reading the driver and acting on what it read
// (rig.afterNextDriverRead).
type getHook struct {
	*fakeFleet
	hook func()
}

func (g *getHook) Get(ctx context.Context, id string) (driver.Driver, error) {
	d, err := g.fakeFleet.Get(ctx, id)
	if h := g.hook; h != nil {
		g.hook = nil
		h()
	}
	return d, err
}

// A decline that read its driver before the driver's accept landed does
// not reopen the booking the accept then made accepted: only a withdrawn
// accept lets an accepted booking go. Before, it reopened it while the
// trip that followed the accept started, and the booking searched for a
// second driver (a reviewer found it, 2026-12-06). It is answered
// ErrChanging: sent again, it backs out properly, or meets the trip.
func TestADeclineThatReadItsDriverBeforeTheAcceptCannotReopenTheBooking(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, _ := r.svc.Create(ctx, req("k")) // allocated to d1
	var started error
	r.afterNextDriverRead(func() { // the decline has read d1 reserved, not accepted
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err != nil {
			t.Errorf("accept: %v", err)
		}
		_, started = r.svc.StartTrip(ctx, "d1", b.ID)
	})
	_, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false)
	if started != nil || !errors.Is(err, ErrChanging) {
		t.Errorf("start_trip = %v and the decline = %v; want the trip started and the decline ErrChanging", started, err)
	}
	got, _ := r.store.Get(ctx, b.ID)
	if d := r.fleet.status("d1"); d.Status != driver.StatusOnTrip || got.Status != Accepted || got.DriverID != "d1" {
		t.Errorf("d1 is %s and the booking %s with %q; want d1 on its trip for the booking, accepted with it", d.Status, got.Status, got.DriverID)
	}
}

// A back-out is one way: an accept sent again while the booking lets go
// (the app's retry of an earlier accept) is refused, so no trip can follow
// it. Before, the accept was taken again and a trip started for a booking
// that then searched for another driver (a reviewer found it).
func TestAnAcceptSentAgainDuringABackOutIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	var accepted, started error
	r.store.beforeUpdate = func(old, next Booking) {
		if old.Status == Accepted && next.Status == Searching {
			r.store.beforeUpdate = nil
			_, accepted = r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true)
			_, started = r.svc.StartTrip(ctx, "d1", b.ID)
		}
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
		t.Fatalf("the back-out = %v, want done", err)
	}
	if accepted == nil || started == nil {
		t.Errorf("during the back-out the accept = %v and start_trip = %v; want both refused", accepted, started)
	}
	r.wantBackedOut(t, b)
}

// A decline held up after reading the driver's first reservation of a
// booking, which resumes after the booking reserved the driver again and
// the driver accepted, is answered ErrWrongBooking (409, final): it names
// a reservation that is over. Answered 503 "send the decline again", as it
// briefly was, its retry would have backed the driver out of the later
// acceptance (the third review found it).
func TestAHeldDeclineMeetingALaterAcceptanceIsFinal(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, _ := r.svc.Create(ctx, req("k")) // allocated to d1, not accepted
	r.afterNextDriverRead(func() {
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil { // its twin
			t.Errorf("twin decline: %v", err)
		}
		r.clk.add(time.Second)
		if err := r.svc.advance(ctx, queued{id: b.ID}); err != nil { // d1 reserved again
			t.Errorf("advance: %v", err)
		}
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err != nil {
			t.Errorf("accept: %v", err)
		}
	})
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); !errors.Is(err, driver.ErrWrongBooking) {
		t.Errorf("the held decline = %v, want ErrWrongBooking", err)
	}
	got, _ := r.store.Get(ctx, b.ID)
	if d := r.fleet.status("d1"); got.Status != Accepted || !d.Accepted {
		t.Errorf("the booking is %s and d1 accepted %t; want the later acceptance standing", got.Status, d.Accepted)
	}
}

// Two declines of one accepted booking (a retry, a slow instance): the one
// whose back-out finds the driver already withdrawn from the same
// reservation carries on, and is done.
func TestADeclineWhoseBackOutCameFromItsTwinCarriesOn(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	r.afterNextDriverRead(func() { // the twin's first step lands after this decline's read
		r.backOutD1(t, b)
	})
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
		t.Errorf("the decline = %v, want done", err)
	}
	r.wantBackedOut(t, b)
}

// A lapsed reservation not accepted whose booking is accepted with it,
// but not withdrawn (a back-out half done by a build that did not mark
// it, or an accept a failover lost), is finished by the sweep too: no
// accept can land after the reservation's end, so no trip can start.
func TestTheSweepFinishesAnUnmarkedHalfBackOut(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	r.fleet.mu.Lock()
	d := r.fleet.drivers["d1"]
	d.Accepted, d.Version = false, d.Version+1
	r.fleet.drivers["d1"] = d
	r.fleet.mu.Unlock()
	r.clk.add(time.Minute)
	r.svc.reserved = &fakeReservations{lapsed: []driver.Driver{r.fleet.status("d1")}}
	r.svc.sweep(ctx)
	r.wantBackedOut(t, b)
}

// An accept sent again whose instance read the driver before the
// back-out is judged on the state it was refused on: refused, not answered
// as a repeat of the accept the back-out withdrew.
func TestAnAcceptReadBeforeABackOutIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	r.afterNextDriverRead(func() {
		r.backOutD1(t, b)
	})
	if got, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); !errors.Is(err, driver.ErrIllegalTransition) {
		t.Errorf("the accept = %+v, %v; want refused", got, err)
	}
}

// failingAccepts is a fleet whose accepts fail in the store (a reply
// lost, a compare-and-set given up): nothing is known to be written.
type failingAccepts struct{ *getHook }

func (f failingAccepts) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	if tr.Event == driver.EventAccept {
		return driver.Driver{}, errors.New("the accept's reply was lost")
	}
	return f.getHook.Apply(ctx, id, tr, now)
}

// An accept whose store write fails is not answered done, even when the
// instance's earlier read showed the driver accepted: that read was of the
// booking's earlier reservation, which the driver backed out of, and the
// write was for the next one. Before, it was taken for an accept sent
// again, and the booking was made accepted with a driver who was not (the
// fourth review found it).
func TestAnAcceptThatFailedInTheStoreIsNotAnsweredDone(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b := r.acceptedByD1(t)
	r.svc.driver = failingAccepts{&getHook{fakeFleet: r.fleet, hook: func() {
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil { // the back-out
			t.Errorf("back-out: %v", err)
		}
		r.clk.add(time.Second)
		if err := r.svc.advance(ctx, queued{id: b.ID}); err != nil { // d1 reserved again
			t.Errorf("advance: %v", err)
		}
	}}}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err == nil {
		t.Error("an accept that failed in the store was answered done")
	}
	if got, _ := r.store.Get(ctx, b.ID); got.Status == Accepted {
		t.Errorf("the booking is accepted with %q, whose accept failed", got.DriverID)
	}
}

// An accept that reaches a booking whose allocation is still being
// recorded (the driver reserved, the booking's update naming it in
// flight) is recorded on the driver and answered ErrChanging (503: it may
// stand), not ErrIllegal (409: nothing done): the update lands, and the
// accept sent again is answered done. Before, it was 409 though the
// driver's record took it and the workers settled the booking as accepted
// (a reviewer found it).
func TestAnAcceptWhileItsAllocationIsRecordedMayStand(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	b, _ := r.svc.Create(ctx, req("k")) // no driver free: searching, version 1
	until := r.clk.now().Add(15 * time.Second)
	r.fleet.mu.Lock()
	r.fleet.drivers["d1"] = driver.Driver{ID: "d1", Status: driver.StatusReserved, BookingID: b.ID, ReservedUntil: until, Version: 2}
	r.fleet.mu.Unlock()
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); !errors.Is(err, ErrChanging) {
		t.Fatalf("the accept = %v, want ErrChanging", err)
	}
	if d := r.fleet.status("d1"); !d.Accepted {
		t.Fatalf("d1 = %+v, want its accept recorded", d)
	}
	named, _ := transition(b, Allocated, r.clk.now())
	named.DriverID, named.ReservedUntil = "d1", until
	if err := r.store.Update(ctx, b, named); err != nil { // the allocation's update lands
		t.Fatal(err)
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err != nil {
		t.Fatalf("the accept sent again = %v, want done", err)
	}
	if got, _ := r.store.Get(ctx, b.ID); got.Status != Accepted || got.DriverID != "d1" {
		t.Errorf("booking %s with %q, want accepted with d1", got.Status, got.DriverID)
	}
}

// A booking that keeps changing under a driver's answer is ErrChanging
// (503: the driver's part may stand), not a bare conflict (answered 500).
func TestAnAnswerWhoseBookingKeepsChangingMayStand(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, _ := r.svc.Create(ctx, req("k"))
	r.store.beforeUpdate = func(old, _ Booking) {
		r.store.mu.Lock()
		cur := r.store.bks[old.ID]
		cur.Version++ // another update lands first, every time
		r.store.bks[old.ID] = cur
		r.store.mu.Unlock()
	}
	if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); !errors.Is(err, ErrChanging) {
		t.Errorf("the accept = %v, want ErrChanging", err)
	}
}

// An accept is written before the reservation ends or never, as an
// allocation's update is: decided before the end (checked against the
// deciding instance's clock) and written after it (the instance held up
// in between), it landed after a worker had read the driver not accepted
// and put the booking back to searching, and was answered refused (409)
// though the driver's record took it (a reviewer found it). The store's
// deadline guard refuses a write past its deadline, so the bound is the
// deadline the accept is sent with.
func TestAnAcceptIsRecordedBeforeItsReservationEndsOrNever(t *testing.T) {
	for _, tc := range []struct {
		name    string
		callers time.Duration // the caller's own deadline
		bound   string        // what bounds the accept: "reservation" or "caller"
	}{
		{"a reservation ending before the caller's deadline", time.Minute, "reservation"},
		{"a caller's deadline before the reservation's end", 5 * time.Second, "caller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "d1")
			b, _ := r.svc.Create(context.Background(), req("k"))
			r.clk.add(5 * time.Second) // 10 s of the 15 s reservation left
			ctx, cancel := context.WithTimeout(context.Background(), tc.callers)
			defer cancel()
			callerDeadline, _ := ctx.Deadline()
			before := time.Now()
			if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, true); err != nil {
				t.Fatalf("accept: %v", err)
			}
			after := time.Now()
			got := r.fleet.acceptDeadline
			switch tc.bound {
			case "reservation":
				left := 10 * time.Second
				if got.Before(before.Add(left)) || got.After(after.Add(left)) {
					t.Errorf("the accept ran to %v, want the reservation's end, within [%v, %v]", got, before.Add(left), after.Add(left))
				}
			case "caller":
				if !got.Equal(callerDeadline) {
					t.Errorf("the accept ran to %v, want the caller's earlier deadline %v", got, callerDeadline)
				}
			}
			if got, _ := r.store.Get(context.Background(), b.ID); got.Status != Accepted {
				t.Errorf("booking %s, want accepted", got.Status)
			}
		})
	}
}

// A driver's accept is recorded but its booking's update is lost; the
// driver then starts the trip. The trip must not start before the booking
// is accepted: once the driver is on the trip, a booking still allocated
// would find its driver gone at the reservation's end and take a second
// one. Found by apollo verify (a primary hang during an accept).
func TestATripStartsOnlyOnceItsBookingIsAccepted(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, _ := r.svc.Create(ctx, req("k"))
	if _, err := r.fleet.Apply(ctx, "d1", driver.Transition{Event: driver.EventAccept, BookingID: b.ID}, r.clk.now()); err != nil {
		t.Fatal(err)
	}
	r.store.mu.Lock()
	r.store.failGet = map[string]bool{b.ID: true} // the booking's shard does not answer
	r.store.mu.Unlock()
	if _, err := r.svc.StartTrip(ctx, "d1", ""); err == nil {
		t.Fatal("the trip started while its booking could not be brought to accepted")
	}
	if d := r.fleet.status("d1"); d.Status != driver.StatusReserved {
		t.Fatalf("d1 is %s, want still reserved", d.Status)
	}
	r.store.mu.Lock()
	r.store.failGet = nil
	r.store.mu.Unlock()
	if d, err := r.svc.StartTrip(ctx, "d1", ""); err != nil || d.Status != driver.StatusOnTrip {
		t.Fatalf("StartTrip = %+v, %v; want on trip", d, err)
	}
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != Accepted || got.DriverID != "d1" {
		t.Fatalf("booking = %s with %q, want accepted with d1", got.Status, got.DriverID)
	}
}

// A booking names its driver only while the reservation holds (G2): the
// update that records an allocation must land before the reservation ends
// or never. Bounded only by the caller's deadline (a worker's is the claim
// hold, 10 s), an instance paused between reserving and recording could
// land it after the sweep had freed the driver for a second booking,
// whenever reservations are shorter than that deadline. One held up past
// the reservation's end writes nothing and frees the driver at once.
func TestAnAllocationIsRecordedBeforeItsReservationEndsOrNever(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		heldFor time.Duration // the instance is held this long after reserving
		bound   string        // what bounds the update: "reservation", "caller", or "" (never sent)
	}{
		{"a reservation shorter than the caller's deadline", 2 * time.Second, 0, "reservation"},
		{"a reservation longer than it", time.Hour, 0, "caller"},
		{"held up past the reservation's end", 2 * time.Second, 3 * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "d1")
			r.fleet.ttl = tc.ttl
			r.fleet.reserved = func() { r.clk.add(tc.heldFor) }
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			callerDeadline, _ := ctx.Deadline()
			before := time.Now()
			b, err := r.svc.Create(ctx, req("k1"))
			after := time.Now()
			got := r.store.updateDeadline
			switch tc.bound {
			case "reservation":
				if err != nil || b.Status != Allocated {
					t.Fatalf("Create = %+v, %v; want allocated", b, err)
				}
				if got.Before(before.Add(tc.ttl)) || got.After(after.Add(tc.ttl)) {
					t.Errorf("the allocation's update ran to %v, want the reservation's end, within [%v, %v]", got, before.Add(tc.ttl), after.Add(tc.ttl))
				}
			case "caller":
				if err != nil || b.Status != Allocated {
					t.Fatalf("Create = %+v, %v; want allocated", b, err)
				}
				if !got.Equal(callerDeadline) {
					t.Errorf("the allocation's update ran to %v, want the caller's earlier deadline %v", got, callerDeadline)
				}
			default:
				if b.Status != Searching || !got.IsZero() {
					t.Errorf("Create = %+v, %v, update sent with deadline %v; want the booking searching and no update", b, err, got)
				}
				if d := r.fleet.status("d1"); d.Status != driver.StatusAvailable {
					t.Errorf("d1 = %+v, want freed at once: the booking certainly does not name it", d)
				}
			}
		})
	}
}

// someShares owns the given partitions of the open index, and gains none.
type someShares []int

func (s someShares) Owned() []fleet.Lease {
	out := make([]fleet.Lease, 0, len(s))
	for _, p := range s {
		out = append(out, fleet.Lease{Partition: p})
	}
	return out
}
func (someShares) Gained() <-chan struct{} { return nil }

// Every instance that works part of the open index sweeps, not only the
// holder of partition 0: when that holder crashes, its lease still runs
// for seconds, and a lapsed reservation must not wait for it. Claiming a
// lapsed reservation takes it from the other sweepers for the hold.
func TestAnInstanceWithoutPartitionZeroSweepsToo(t *testing.T) {
	fl := &fakeFleet{drivers: map[string]driver.Driver{}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	orphan := driver.Driver{ID: "d-orphan", Status: driver.StatusReserved, BookingID: "bk-never-saved", ReservedUntil: clk.now().Add(-time.Minute)}
	fl.drivers[orphan.ID] = orphan
	rs := &fakeReservations{lapsed: []driver.Driver{orphan}}
	cfg := DefaultConfig()
	cfg.ScanEvery = 5 * time.Millisecond
	svc, err := NewService(cfg, &fakeAdmit{}, fl, newMemStore(), fl, rs, someShares{1}, clk.now, nil, &fakeMetrics{outcomes: map[string]int{}})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start()
	defer svc.Stop()
	eventually(t, "the orphan swept by the holder of partition 1", func() bool {
		return fl.status(orphan.ID).Status == driver.StatusAvailable
	})
}
