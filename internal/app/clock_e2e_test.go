package app_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// heldAllocator lets the first allocation reserve its driver, then holds
// it, as a pause of the instance between reserving and recording would.
type heldAllocator struct {
	booking.Allocator
	once     sync.Once
	reserved chan struct{} // closed once the driver is reserved
	proceed  chan struct{} // closed to let the allocation go on
}

func (h *heldAllocator) Allocate(ctx context.Context, id, service string, at driver.Location, now time.Time) (string, time.Time, error) {
	d, until, err := h.Allocator.Allocate(ctx, id, service, at, now)
	h.once.Do(func() {
		close(h.reserved)
		<-h.proceed
	})
	return d, until, err
}

// Instances keep the cluster's time, so one whose host clock is off does
// not break G2. Instance A's clock is 3 s behind B's (B's is the
// machine's, the one the nodes share). A reserves the only driver for a
// booking with a 2 s reservation and is held before it records the
// allocation; B, the sweeper, frees the reservation once it has lapsed;
// then A goes on. Keeping its own time, A set the reservation's end 3 s
// early in B's eyes: B freed the driver at once, and A's update, inside
// the end A had set, landed — a booking naming a driver that no longer
// held it, free for a second booking. Keeping the cluster's time, B frees
// the driver only after the end A's update is bound by, so the update
// lands before or never.
func TestAnInstanceWhoseClockIsBehindCannotRecordADriverTheSweepFreed(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	config := func(id string) app.Config {
		cfg := fleetConfig(c, id, 10*time.Second)
		cfg.Fleet.Partitions = 1 // one sweeper: the holder of the one partition
		cfg.Booking.ClaimHold, cfg.Booking.AllocationTimeout = 10*time.Second, time.Minute
		cfg.Dispatch.ReservationTTL = 2 * time.Second
		return cfg
	}
	b, _, _ := serveApp(t, config("b"))
	waitOwned(t, b, 1, 10*time.Second)
	goOnline(t, b, "d1", driver.Location{Lat: 1.30, Lng: 103.8}, time.Now())

	cfgA := config("a")
	cfgA.Redis.Wall = func() time.Time { return time.Now().Add(-3 * time.Second) }
	held := &heldAllocator{reserved: make(chan struct{}), proceed: make(chan struct{})}
	a, err := app.New(context.Background(), cfgA, slog.New(slog.DiscardHandler),
		app.WrapAllocator(func(al booking.Allocator) booking.Allocator { held.Allocator = al; return held }))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	type created struct {
		b   booking.Booking
		err error
	}
	done := make(chan created, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		bk, err := a.Bookings().Create(ctx, booking.Request{RiderID: "r", Service: "car", IdempotencyKey: "k",
			Pickup: driver.Location{Lat: 1.30, Lng: 103.8}, Dropoff: driver.Location{Lat: 1.35, Lng: 103.9}})
		done <- created{bk, err}
	}()
	select {
	case <-held.reserved:
	case got := <-done:
		t.Fatalf("the booking was not allocated: %+v, %v", got.b, got.err)
	}
	// Let B sweep the reservation once it has lapsed in B's eyes (2 s and
	// a 1 s grace after its end), then let A record it.
	ctx := context.Background()
	reserved := time.Now()
	for {
		d, err := b.Drivers().Get(ctx, "d1")
		if err == nil && d.Status == driver.StatusAvailable {
			t.Logf("the sweep freed d1 %s after it was reserved", time.Since(reserved).Round(time.Millisecond))
			break
		}
		if time.Since(reserved) > 20*time.Second {
			close(held.proceed)
			t.Fatalf("the sweep did not free d1 in 20 s (%+v, %v): this test shows nothing", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(held.proceed)
	got := <-done
	d, err := b.Drivers().Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if got.b.Status == booking.Allocated && got.b.DriverID == "d1" && (d.Status != driver.StatusReserved || d.BookingID != got.b.ID) {
		t.Errorf("booking %s was recorded allocated to d1 (reserved until %v), but d1 is %s for %q: the sweep had freed it, and a second booking can take it",
			got.b.ID, got.b.ReservedUntil, d.Status, d.BookingID)
	}
}
