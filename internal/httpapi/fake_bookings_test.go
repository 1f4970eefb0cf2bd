package httpapi_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// seedBookings are the bookings every fresh fake starts with.
func seedBookings() []booking.Booking {
	pickup, dropoff := driver.Location{Lat: 1.3, Lng: 103.8}, driver.Location{Lat: 1.31, Lng: 103.85}
	mk := func(id string, st booking.Status, driverID string, version int64) booking.Booking {
		b := booking.Booking{ID: id, RiderID: "r1", Service: "car", Pickup: pickup, Dropoff: dropoff, Status: st, DriverID: driverID,
			CreatedAt: testNow.Add(-time.Minute), Deadline: testNow.Add(-30 * time.Second), UpdatedAt: testNow.Add(-time.Minute), Version: version}
		if st == booking.Allocated {
			b.ReservedUntil = testNow.Add(time.Minute)
		}
		if st == booking.Allocated || st == booking.Accepted { // allocated 2 s after creation; accepting keeps it
			b.AllocatedAt = b.CreatedAt.Add(2 * time.Second)
			b.UpdatedAt = b.AllocatedAt
		}
		return b
	}
	return []booking.Booking{
		mk("bk-search", booking.Searching, "", 1),
		mk("bk-alloc", booking.Allocated, "drv-res", 2),
		mk("bk-done", booking.Accepted, "drv-1", 3),
		mk("bk-gone", booking.Cancelled, "", 2),
	}
}

// fakeBookings is an in-memory httpapi.Bookings that keeps the booking
// pipeline's promises (idempotent Create, Wait until the version changes,
// Cancel only before acceptance), with knobs to make it fail. The
// pipeline's own tests cover the pipeline.
type fakeBookings struct {
	mu       sync.Mutex
	bookings map[string]booking.Booking
	changed  chan struct{} // closed and replaced on every change

	err        error // when set, every method fails with it
	waitAsErr  bool  // Wait reports the end of its context as an error instead of returning the booking
	gotReq     booking.Request
	gotSeen    []int64       // the seen argument of each Wait
	waiting    chan struct{} // when set, told when a Wait has read the booking and waits
	endedEarly bool          // the last Wait returned while its context was live
	calls      map[string]int
	deadline   time.Time // Create, Cancel: the context's deadline (zero: none)
}

func newFakeBookings(bs ...booking.Booking) *fakeBookings {
	f := &fakeBookings{bookings: make(map[string]booking.Booking), changed: make(chan struct{}), calls: make(map[string]int)}
	for _, b := range bs {
		f.bookings[b.ID] = b
	}
	return f
}

// enter counts the call and applies the failure knob; f.mu is held.
func (f *fakeBookings) enter(method string) error {
	f.calls[method]++
	return f.err
}

func (f *fakeBookings) callsTo(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// put stores b and wakes every Wait; f.mu is held.
func (f *fakeBookings) put(b booking.Booking) {
	f.bookings[b.ID] = b
	close(f.changed)
	f.changed = make(chan struct{})
}

// update changes a stored booking and bumps its version, as a worker would.
func (f *fakeBookings) update(id string, change func(*booking.Booking)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bookings[id]
	change(&b)
	b.Version++
	f.put(b)
}

func (f *fakeBookings) Create(ctx context.Context, req booking.Request) (booking.Booking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline, _ = ctx.Deadline()
	if err := f.enter("Create"); err != nil {
		return booking.Booking{}, err
	}
	f.gotReq = req
	id := booking.ID(req.RiderID, req.IdempotencyKey)
	if b, ok := f.bookings[id]; ok {
		return b, nil
	}
	b := booking.Booking{ID: id, RiderID: req.RiderID, Service: req.Service, Pickup: req.Pickup, Dropoff: req.Dropoff,
		Status: booking.Searching, CreatedAt: testNow, Deadline: testNow.Add(30 * time.Second), UpdatedAt: testNow, Version: 1}
	f.put(b)
	return b, nil
}

func (f *fakeBookings) Get(_ context.Context, id string) (booking.Booking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Get"); err != nil {
		return booking.Booking{}, err
	}
	return f.get(id)
}

func (f *fakeBookings) get(id string) (booking.Booking, error) {
	b, ok := f.bookings[id]
	if !ok {
		return booking.Booking{}, fmt.Errorf("booking %s: %w", id, booking.ErrNotFound)
	}
	return b, nil
}

func (f *fakeBookings) Wait(ctx context.Context, id string, seen int64) (booking.Booking, error) {
	f.mu.Lock()
	if err := f.enter("Wait"); err != nil {
		f.mu.Unlock()
		return booking.Booking{}, err
	}
	f.gotSeen = append(f.gotSeen, seen)
	waiting := f.waiting
	f.mu.Unlock()
	for {
		f.mu.Lock()
		b, err := f.get(id)
		changed := f.changed
		f.mu.Unlock()
		if err != nil || b.Version != seen {
			f.mu.Lock()
			f.endedEarly = ctx.Err() == nil
			f.mu.Unlock()
			return b, err
		}
		if waiting != nil {
			waiting <- struct{}{}
			waiting = nil
		}
		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.endedEarly = false
			asErr := f.waitAsErr
			f.mu.Unlock()
			if asErr {
				return booking.Booking{}, fmt.Errorf("wait for %s: %w", id, ctx.Err())
			}
			return b, nil
		case <-changed:
		}
	}
}

func (f *fakeBookings) Cancel(ctx context.Context, id string) (booking.Booking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline, _ = ctx.Deadline()
	if err := f.enter("Cancel"); err != nil {
		return booking.Booking{}, err
	}
	b, err := f.get(id)
	if err != nil || b.Status == booking.Cancelled {
		return b, err // sent again: done
	}
	if b.Status != booking.Searching && b.Status != booking.Allocated {
		return b, fmt.Errorf("%w: %s → %s", booking.ErrIllegal, b.Status, booking.Cancelled)
	}
	b.Status, b.DriverID, b.ReservedUntil, b.UpdatedAt = booking.Cancelled, "", time.Time{}, testNow
	b.Version++
	f.put(b)
	return b, nil
}
