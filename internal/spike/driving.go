package spike

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/sim"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// maxInFlight bounds the riders waiting on the pipeline at once, so a
// stalled pipeline shows up as latency and failures, not as a goroutine
// pile-up in the drill itself.
const maxInFlight = 2048

// driving is the simulated city of one run: riders booking, a fleet
// answering and driving, and what became of each rider.
type driving struct {
	svc   *instances
	fleet *sim.Fleet
	fates []fate
	index map[string]int // booking ID → fate, for the drivers

	mu sync.Mutex // guards index and fates[i].tripAt once riding
}

func newDriving(cfg Config, svc *instances, arrivals []sim.Arrival) (*driving, error) {
	d := &driving{svc: svc, fates: make([]fate, len(arrivals)), index: map[string]int{}}
	for i, a := range arrivals {
		d.fates[i].arr = a
	}
	fc := sim.DefaultFleetConfig()
	fc.Size, fc.Seed, fc.City = cfg.Drivers, cfg.Seed, cfg.City
	// Drivers are scarce where the storm hits: none start inside it.
	fc.AvoidCenter, fc.AvoidRadiusM = cfg.Hotspot, cfg.RadiusM
	fc.Behaviour = &sim.Behaviour{AcceptProb: 0.9, TripDuration: 60 * time.Second, ChurnProb: 0.002,
		Trips: d.trip, OnEvent: d.onDriverEvent}
	f, err := sim.NewFleet(fc, svc)
	if err != nil {
		return nil, err
	}
	d.fleet = f
	return d, nil
}

// trip tells a driver where its booking's rider is and goes.
func (d *driving) trip(bookingID string) (pickup, dropoff driver.Location, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, ok := d.index[bookingID]
	if !ok {
		return pickup, dropoff, false
	}
	return d.fates[i].arr.Pickup, d.fates[i].arr.Dropoff, true
}

func (d *driving) onDriverEvent(_ string, ev driver.Event, bookingID string) {
	if ev != driver.EventStartTrip {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, ok := d.index[bookingID]; ok && d.fates[i].tripAt.IsZero() {
		d.fates[i].tripAt = time.Now()
	}
}

// ride sends every rider's booking at its time.
func (d *driving) ride(ctx context.Context, start time.Time, say Progress) error {
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	nextReport := 10 * time.Second
	for i := range d.fates {
		at := d.fates[i].arr.At
		if err := sleep(ctx, time.Until(start.Add(at))); err != nil {
			return err
		}
		if at >= nextReport {
			say("  t=%3.0fs  %d riders so far", at.Seconds(), i)
			nextReport += 10 * time.Second
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.book(ctx, i)
		}()
	}
	return nil
}

// book is one rider's request, as the HTTP handler would make it.
func (d *driving) book(ctx context.Context, i int) {
	f := &d.fates[i]
	a := f.arr
	req := booking.Request{RiderID: a.Rider, Service: "car", Pickup: a.Pickup, Dropoff: a.Dropoff, IdempotencyKey: a.Rider}
	var outcome spampede.Outcome
	cctx, cancel := context.WithTimeout(withProbe(ctx, &outcome), 5*time.Second)
	defer cancel()
	t0 := time.Now()
	b, err := d.svc.Create(cctx, req)
	f.latency, f.sent, f.outcome = time.Since(t0), true, outcome
	var hd *booking.HighDemandError
	switch {
	case errors.As(err, &hd):
		f.rejected = true
	case err != nil:
		f.err = err
	default:
		f.bookingID = b.ID
		d.mu.Lock()
		d.index[b.ID] = i
		d.mu.Unlock()
	}
}

// settle reads every admitted booking's final state. A booking still
// searching is read again until it settles or settleWithin has passed: a
// loaded machine gives bookings up late, and late is not lost (overdue,
// from the first reading, says how late). One that cannot be read stays
// pending and its error is reported.
func (d *driving) settle(ctx context.Context, say Progress) {
	open := d.read(ctx, d.admitted(), true)
	deadline := time.Now().Add(settleWithin)
	if len(open) > 0 {
		say("%d bookings still searching; reading them again for up to %s", len(open), settleWithin)
	}
	for len(open) > 0 && time.Now().Before(deadline) && sleep(ctx, 250*time.Millisecond) == nil {
		open = d.read(ctx, open, false)
	}
}

// settleWithin bounds how long settle waits for searching bookings.
const settleWithin = 30 * time.Second

// admitted lists the fates of the bookings reported created.
func (d *driving) admitted() []int {
	var idx []int
	for i := range d.fates {
		if d.fates[i].bookingID != "" {
			idx = append(idx, i)
		}
	}
	return idx
}

// read reads the bookings of fates idx and returns those still searching;
// first marks the reading that judges whether a booking is overdue.
func (d *driving) read(ctx context.Context, idx []int, first bool) []int {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, i := range idx {
		f := &d.fates[i]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := d.svc.Get(ctx, f.bookingID)
			if err != nil {
				f.status, f.settleErr = booking.Searching, err
				return
			}
			f.status, f.settleErr = b.Status, nil
			if first {
				f.overdue = b.Status == booking.Searching && time.Since(b.Deadline) > overdueAfter
			}
			if !b.AllocatedAt.IsZero() {
				f.allocIn = b.AllocatedAt.Sub(b.CreatedAt)
			}
		}()
	}
	wg.Wait()
	var open []int
	for _, i := range idx {
		if d.fates[i].status == booking.Searching {
			open = append(open, i)
		}
	}
	return open
}

// overdueAfter is how long past its deadline a booking may still be
// searching: two scans, and the rest of a claim hold.
const overdueAfter = 2 * time.Second

// overdue counts the admitted bookings still searching well past their
// deadline when the run settled.
func (d *driving) overdue() int {
	n := 0
	for i := range d.fates {
		if d.fates[i].overdue {
			n++
		}
	}
	return n
}
