package httpapi_test

import (
	"context"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// fakeDrivers is an in-memory httpapi.Drivers that runs the real state
// machine, with knobs to make it fail or panic. It stands in for the Redis
// store, whose own tests cover storage.
type fakeDrivers struct {
	mu      sync.Mutex
	drivers map[string]driver.Driver

	err      error            // when set, every method fails with it
	panicV   any              // when set, every method panics with it
	failIDs  map[string]error // BatchGet: ids whose read fails
	nearby   redisstore.Nearby
	gotQuery redisstore.NearbyQuery
	gotIDs   []string
	calls    int
	deadline time.Time // Heartbeat, Apply, Get: the context's deadline (zero: none)
}

func newFake(ds ...driver.Driver) *fakeDrivers {
	f := &fakeDrivers{drivers: make(map[string]driver.Driver), failIDs: make(map[string]error)}
	for _, d := range ds {
		f.drivers[d.ID] = d
	}
	return f
}

// enter counts the call and applies the failure knobs.
func (f *fakeDrivers) enter() error {
	f.calls++
	if f.panicV != nil {
		panic(f.panicV)
	}
	return f.err
}

func (f *fakeDrivers) Get(ctx context.Context, id string) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline, _ = ctx.Deadline()
	if err := f.enter(); err != nil {
		return driver.Driver{}, err
	}
	d, ok := f.drivers[id]
	if !ok {
		return driver.Driver{}, redisstore.ErrNotFound
	}
	return d, nil
}

func (f *fakeDrivers) BatchGet(_ context.Context, ids []string) (redisstore.Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(); err != nil {
		return redisstore.Batch{}, err
	}
	f.gotIDs = append([]string(nil), ids...)
	b := redisstore.Batch{Drivers: make([]driver.Driver, 0, len(ids))}
	for _, id := range ids {
		if err, ok := f.failIDs[id]; ok {
			b.Failed = append(b.Failed, redisstore.Failure{ID: id, Err: err})
		} else if d, ok := f.drivers[id]; ok {
			b.Drivers = append(b.Drivers, d)
		} else {
			b.Missing = append(b.Missing, id)
		}
	}
	return b, nil
}

// current returns the stored driver, or a new offline one.
func (f *fakeDrivers) current(id string) driver.Driver {
	if d, ok := f.drivers[id]; ok {
		return d
	}
	return driver.Driver{ID: id, Status: driver.StatusOffline}
}

func (f *fakeDrivers) Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline, _ = ctx.Deadline()
	if err := f.enter(); err != nil {
		return driver.Driver{}, err
	}
	d, err := driver.Heartbeat(f.current(id), loc, now)
	if err != nil {
		return driver.Driver{}, err
	}
	f.drivers[id] = d
	return d, nil
}

// Apply returns the current driver with a refusal, as the store may.
func (f *fakeDrivers) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline, _ = ctx.Deadline()
	if err := f.enter(); err != nil {
		return driver.Driver{}, err
	}
	d := f.current(id)
	if tr.BookingID == "" {
		tr.BookingID = d.BookingID
	}
	next, err := driver.Apply(d, tr, now)
	if err != nil {
		return d, err
	}
	f.drivers[id] = next
	return next, nil
}

func (f *fakeDrivers) Nearby(_ context.Context, q redisstore.NearbyQuery, _ time.Time) (redisstore.Nearby, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(); err != nil {
		return redisstore.Nearby{}, err
	}
	f.gotQuery = q
	return f.nearby, nil
}
