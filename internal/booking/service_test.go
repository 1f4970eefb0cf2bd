package booking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
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
	mu   sync.Mutex
	bks  map[string]Booking
	open map[string]bool
}

func newMemStore() *memStore { return &memStore{bks: map[string]Booking{}, open: map[string]bool{}} }

func (m *memStore) Create(_ context.Context, b Booking) (Booking, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.bks[b.ID]; ok {
		return old, false, nil
	}
	b.Version = 1
	m.bks[b.ID], m.open[b.ID] = b, true
	return b, true, nil
}

func (m *memStore) Get(_ context.Context, id string) (Booking, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.bks[id]
	if !ok {
		return b, ErrNotFound
	}
	return b, nil
}

func (m *memStore) Update(_ context.Context, old, next Booking) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bks[old.ID].Version != old.Version {
		return errors.New("conflict")
	}
	next.Version = old.Version + 1
	m.bks[old.ID] = next
	m.open[old.ID] = !next.Status.Final()
	return nil
}

func (m *memStore) Open(context.Context, int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, open := range m.open {
		if open {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (m *memStore) Forget(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, id)
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

// fakeFleet hands out free drivers and records releases.
type fakeFleet struct {
	mu       sync.Mutex
	free     []string
	released []string
	calls    int
}

func (f *fakeFleet) Allocate(_ context.Context, _ string, _ string, _ driver.Location, now time.Time) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(f.free) == 0 {
		return "", time.Time{}, dispatch.ErrNoDriver
	}
	d := f.free[0]
	f.free = f.free[1:]
	return d, now.Add(15 * time.Second), nil
}

func (f *fakeFleet) Release(_ context.Context, driverID, _ string, expired bool, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, fmt.Sprintf("%s expired=%v", driverID, expired))
	f.free = append(f.free, driverID)
	return nil
}

type rig struct {
	svc   *Service
	store *memStore
	admit *fakeAdmit
	fleet *fakeFleet
	clk   *clock
}

func newRig(t *testing.T, drivers ...string) *rig {
	t.Helper()
	return newRigWith(t, func(*Config) {}, drivers...)
}

func newRigWith(t *testing.T, edit func(*Config), drivers ...string) *rig {
	t.Helper()
	r := &rig{store: newMemStore(), admit: &fakeAdmit{}, fleet: &fakeFleet{free: drivers}, clk: &clock{t: time.Unix(1_800_000_000, 0)}}
	cfg := DefaultConfig()
	cfg.ScanEvery = 5 * time.Millisecond
	edit(&cfg)
	svc, err := NewService(cfg, r.admit, r.fleet, r.store, r.fleet, r.clk.now, nil)
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
	b, _ := r.svc.Create(ctx, req("k"))
	if err := r.svc.DriverResponded(ctx, b.ID, "someone-else", true); !errors.Is(err, ErrIllegal) {
		t.Errorf("accept by another driver = %v, want ErrIllegal", err)
	}
	if err := r.svc.DriverResponded(ctx, b.ID, "d1", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != Searching || got.DriverID != "" {
		t.Fatalf("after decline = %+v, want searching without a driver", got)
	}
	r.fleet.mu.Lock()
	r.fleet.free = append(r.fleet.free, "d2")
	r.fleet.mu.Unlock()
	r.svc.Start()
	defer r.svc.Stop()
	eventually(t, "re-allocated", func() bool { got, _ := r.svc.Get(ctx, b.ID); return got.Status == Allocated })
	got, _ := r.svc.Get(ctx, b.ID)
	if err := r.svc.DriverResponded(ctx, b.ID, got.DriverID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != Accepted {
		t.Fatalf("after accept = %s", got.Status)
	}
	if _, err := r.svc.Cancel(ctx, b.ID); !errors.Is(err, ErrIllegal) {
		t.Errorf("cancel after accept = %v, want ErrIllegal", err)
	}
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

func TestOpenBookingsAreResumedByANewProcess(t *testing.T) {
	first := newRig(t)
	b, _ := first.svc.Create(context.Background(), req("k"))
	// The first process stops without finishing; a second one starts on the same store.
	second := newRig(t, "d9")
	second.store = first.store
	second.svc.store = first.store
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
