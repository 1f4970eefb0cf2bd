package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
)

// workload is riders and drivers acting only through the public API of
// the instances, round-robin, every action recorded.
type workload struct {
	rec       *recorder
	instances []*Instance
	drivers   int
	riders    int
	seed      uint64
	center    [2]float64 // where every pickup and driver is: bookings compete for drivers

	health    *balancer // nil: no health checks
	mu        sync.Mutex
	rr        int
	bookings  map[string]bool // every booking ID a create was sent for
	driverIDs []string
}

func (w *workload) instance() string {
	w.mu.Lock()
	w.rr++
	i := w.rr % len(w.instances)
	w.mu.Unlock()
	return w.inFrom(i)
}

// after is the instance after api in the round (api itself when there is
// only one).
func (w *workload) after(api string) string {
	for i, in := range w.instances {
		if in.API() == api {
			return w.inFrom((i + 1) % len(w.instances))
		}
	}
	return api
}

// inFrom is the first instance from i on that the balancer has in (i's
// own when it has none in, or there is no balancer).
func (w *workload) inFrom(i int) string {
	for k := range len(w.instances) {
		if j := (i + k) % len(w.instances); w.health.in(j) {
			return w.instances[j].API()
		}
	}
	return w.instances[i].API()
}

// run drives every rider and driver until ctx ends; each has its own
// goroutine, owned by run.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range w.drivers {
		id := fmt.Sprintf("vd-%03d", i)
		w.mu.Lock()
		w.driverIDs = append(w.driverIDs, id)
		w.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.driver(ctx, i, id, rand.New(rand.NewPCG(w.seed, uint64(i))))
		}()
	}
	for i := range w.riders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.rider(ctx, w.drivers+i, fmt.Sprintf("vr-%03d", i), rand.New(rand.NewPCG(w.seed, uint64(1000+i))), rand.New(rand.NewPCG(w.seed, uint64(2000+i))))
		}()
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// driver heartbeats, goes on line, and answers reservations: mostly
// accepts (then picks up and drops off the rider), sometimes declines,
// sometimes lets the reservation lapse, and then, one time in three, its
// app goes quiet (a phone out of battery, an app killed) for driverQuiet:
// only Apollo can free it then (G5), and its first read when it comes back
// shows whether it did (reservation_overdue).
func (w *workload) driver(ctx context.Context, client int, id string, rng *rand.Rand) {
	lat := w.center[0] + (rng.Float64()-0.5)*0.01
	lng := w.center[1] + (rng.Float64()-0.5)*0.01
	op := func(k Kind) Op { return Op{Client: client, Kind: k, DriverID: id, Instance: w.instance()} }
	// eventUntil sends ev for bookingID; reservedUntil (unix ms), when not 0,
	// names the reservation it answers.
	eventUntil := func(ev, bookingID string, reservedUntil int64) Op {
		o := op(DriverEvent)
		o.Event, o.BookingID = ev, bookingID
		body := map[string]any{"type": ev}
		if ev == "go_online" {
			body["services"] = []string{"car"}
		}
		if bookingID != "" {
			body["booking_id"] = bookingID
		}
		if reservedUntil != 0 {
			body["reserved_until"] = time.UnixMilli(reservedUntil).UTC().Format(time.RFC3339Nano)
		}
		return w.rec.do(ctx, o, http.MethodPost, "/v1/drivers/"+id+"/events", body, nil)
	}
	event := func(ev, bookingID string) Op { return eventUntil(ev, bookingID, 0) }
	// answer is an accept or a decline of the reservation d showed; half
	// of them name it (reserved_until), as an app that keeps the offer it
	// shows does, so that both forms meet every fault.
	answer := func(ev string, d State) Op {
		if d.ReservedUntil == 0 || d.BookingID == "" || rng.IntN(2) == 0 {
			return event(ev, d.BookingID)
		}
		return eventUntil(ev, d.BookingID, d.ReservedUntil)
	}
	lastBeat := time.Time{}
	online := false
	for ctx.Err() == nil {
		if time.Since(lastBeat) > time.Second {
			w.rec.do(ctx, op(Heartbeat), http.MethodPut, "/v1/drivers/"+id+"/location", map[string]float64{"lat": lat, "lng": lng}, nil)
			lastBeat = time.Now()
		}
		if !online {
			online = event("go_online", "").Outcome == OK
			continue
		}
		d := w.rec.do(ctx, op(ReadDriver), http.MethodGet, "/v1/drivers/"+id, nil, nil)
		switch {
		case d.Outcome != OK || d.Status != http.StatusOK:
		case d.Seen.Status == "offline":
			online = false
		case d.Seen.Status == "reserved" && d.Seen.Withdrawn: // backing out: freed in a moment
		case d.Seen.Status == "reserved" && !d.Seen.Accepted:
			switch p := rng.Float64(); {
			case p < 0.7:
				answer("accept", d.Seen)
			case p < 0.85:
				answer("decline", d.Seen)
			case p < 0.9:
				sleep(ctx, driverQuiet) // lets it lapse, and says nothing
			} // else: let it lapse
		case d.Seen.Status == "reserved" && d.Seen.Accepted:
			switch backOut := rng.Float64() < backOutShare; {
			case !sleep(ctx, time.Duration(200+rng.IntN(800))*time.Millisecond):
			case backOut: // the booking searches again
				answer("decline", d.Seen)
			default:
				event("start_trip", d.Seen.BookingID)
			}
		case d.Seen.Status == "on_trip":
			if sleep(ctx, time.Duration(500+rng.IntN(1500))*time.Millisecond) {
				event("end_trip", d.Seen.BookingID)
			}
		}
		sleep(ctx, time.Duration(100+rng.IntN(200))*time.Millisecond)
	}
}

// acceptedWatch is how many more times a rider reads a booking once it is
// accepted (a poll every 200–500 ms): longer than a driver takes to start
// the trip or back out (200 ms to 1 s), so that the booking model sees a
// back-out's booking search again.
const acceptedWatch = 6

// backOutShare is the share of accepted bookings whose driver backs out
// before the trip starts.
const backOutShare = 0.1

// driverQuiet is how long a driver's app stays quiet after a reservation
// it let lapse: longer than the reservation's end plus the checks' slack
// and a driver read's lag, so that a reservation Apollo did not free is
// seen overdue.
const driverQuiet = 15 * time.Second

// doubleSubmit is the share of bookings a rider creates twice at once
// (the second within 300 ms of the first, on another instance); the
// second's ops are recorded under the client number plus
// doubleSubmitClients.
const (
	doubleSubmit        = 0.1
	doubleSubmitClients = 1 << 20
)

// rider books a ride, follows it until it is settled, sometimes cancels it,
// and books again.
func (w *workload) rider(ctx context.Context, client int, riderID string, rng, doubles *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("k-%d", n)
		id := booking.ID(riderID, key)
		w.mu.Lock()
		w.bookings[id] = true
		w.mu.Unlock()
		body := map[string]any{"rider_id": riderID, "service": "car",
			"pickup":  map[string]float64{"lat": w.center[0] + (rng.Float64()-0.5)*0.01, "lng": w.center[1] + (rng.Float64()-0.5)*0.01},
			"dropoff": map[string]float64{"lat": w.center[0] + 0.02, "lng": w.center[1] + 0.02}}
		create := Op{Client: client, Kind: CreateBooking, BookingID: id, Instance: w.instance()}
		var double sync.WaitGroup
		if doubles.Float64() < doubleSubmit {
			// The same create again, to another instance, while the
			// first may still run (a double tap, a client's retry that
			// does not wait): one may withdraw what the other reports.
			// Drawn from a stream of its own, so that the rest of the
			// rider's choices stay what a seed gave before.
			again, delay := create, time.Duration(doubles.IntN(300))*time.Millisecond
			again.Client, again.Instance = client+doubleSubmitClients, w.after(create.Instance)
			double.Go(func() {
				if sleep(ctx, delay) {
					w.rec.do(ctx, again, http.MethodPost, "/v1/bookings", body, map[string]string{"Idempotency-Key": key})
				}
			})
		}
		c := w.rec.do(ctx, create, http.MethodPost, "/v1/bookings", body, map[string]string{"Idempotency-Key": key})
		double.Wait()
		if c.Outcome == Unknown && rng.Float64() < 0.5 {
			// A retry with the same key: it must find the booking, never make a second.
			create.Instance = w.instance()
			w.rec.do(ctx, create, http.MethodPost, "/v1/bookings", body, map[string]string{"Idempotency-Key": key})
		}
		cancelAt := -1
		if rng.Float64() < 0.15 {
			cancelAt = rng.IntN(6)
		}
		watched := 0 // polls of the booking once accepted
		for poll := 0; ctx.Err() == nil && poll < 200; poll++ {
			if poll == cancelAt {
				o := Op{Client: client, Kind: CancelBooking, BookingID: id, Instance: w.instance()}
				if c := w.rec.do(ctx, o, http.MethodPost, "/v1/bookings/"+id+"/cancel", nil, nil); c.Outcome == Unknown && rng.Float64() < 0.5 {
					// Sent again, as an app does after no answer: if the first
					// landed, this one is done too, never refused.
					o.Instance = w.instance()
					w.rec.do(ctx, o, http.MethodPost, "/v1/bookings/"+id+"/cancel", nil, nil)
				}
			}
			r := w.rec.do(ctx, Op{Client: client, Kind: ReadBooking, BookingID: id, Instance: w.instance()}, http.MethodGet, "/v1/bookings/"+id, nil, nil)
			accepted := r.Outcome == OK && r.Seen.Status == string(booking.Accepted)
			if accepted && watched < acceptedWatch {
				watched++ // until its driver is on the way: it may back out
			} else if r.Outcome == OK && (r.Status == http.StatusNotFound && poll > 3 || settled(r.Seen.Status)) {
				break
			}
			sleep(ctx, time.Duration(200+rng.IntN(300))*time.Millisecond)
		}
		sleep(ctx, time.Duration(rng.IntN(500))*time.Millisecond)
	}
}

func (w *workload) bookingIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.bookings))
	for id := range w.bookings {
		out = append(out, id)
	}
	return out
}
