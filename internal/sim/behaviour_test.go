package sim

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// stateDrivers keeps drivers with the real state machine, in memory.
type stateDrivers struct {
	mu sync.Mutex
	d  map[string]driver.Driver
}

func (s *stateDrivers) Heartbeat(_ context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.d[id]
	if !ok {
		d = driver.Driver{ID: id, Status: driver.StatusOffline}
	}
	d, err := driver.Heartbeat(d, loc, now)
	s.d[id] = d
	return d, err
}

func (s *stateDrivers) Apply(_ context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := driver.Apply(s.d[id], tr, now)
	if err == nil {
		s.d[id] = d
	}
	return d, err
}

// A reserved driver answers on its next heartbeat, picks the rider up on
// the one after, and ends the trip at the drop-off once it has lasted
// TripDuration.
func TestDriversAnswerReservationsAndDriveTrips(t *testing.T) {
	for _, tt := range []struct {
		name   string
		accept float64
		want   []driver.Event
	}{
		{"accepting", 1, []driver.Event{driver.EventAccept, driver.EventStartTrip, driver.EventEndTrip}},
		{"declining", 0, []driver.Event{driver.EventDecline}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &stateDrivers{d: map[string]driver.Driver{}}
			pickup, dropoff := driver.Location{Lat: 1.30, Lng: 103.80}, driver.Location{Lat: 1.35, Lng: 103.90}
			var events []driver.Event
			cfg := DefaultFleetConfig()
			cfg.Size = 1
			cfg.Behaviour = &Behaviour{AcceptProb: tt.accept, TripDuration: time.Minute,
				Trips:   func(string) (driver.Location, driver.Location, bool) { return pickup, dropoff, true },
				OnEvent: func(_ string, ev driver.Event, _ string) { events = append(events, ev) }}
			fleet, err := NewFleet(cfg, store)
			if err != nil {
				t.Fatal(err)
			}
			clock := time.Unix(1_800_000_000, 0)
			now := func() time.Time { return clock }
			if err := fleet.Seed(context.Background(), now, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Apply(context.Background(), ID(0), driver.Transition{Event: driver.EventReserve, BookingID: "bk-1", Until: clock.Add(15 * time.Second)}, clock); err != nil {
				t.Fatal(err)
			}
			beat := func() {
				d, _ := store.Heartbeat(context.Background(), ID(0), fleet.locs[0], clock)
				if err := fleet.behave(context.Background(), 0, d, now); err != nil {
					t.Fatal(err)
				}
			}
			beat() // answers
			clock = clock.Add(5 * time.Second)
			beat() // picks up, if accepted
			clock = clock.Add(30 * time.Second)
			beat() // still driving
			clock = clock.Add(31 * time.Second)
			beat() // arrived
			if len(events) != len(tt.want) {
				t.Fatalf("events %v, want %v", events, tt.want)
			}
			for i := range events {
				if events[i] != tt.want[i] {
					t.Fatalf("events %v, want %v", events, tt.want)
				}
			}
			if got := store.d[ID(0)].Status; got != driver.StatusAvailable {
				t.Errorf("driver ends %s, want available", got)
			}
			if tt.accept == 1 && fleet.locs[0] != dropoff {
				t.Errorf("driver at %+v after the trip, want the drop-off %+v", fleet.locs[0], dropoff)
			}
		})
	}
}

func TestFleetStartsNoDriverInsideTheAvoidedCircle(t *testing.T) {
	cfg := DefaultFleetConfig()
	cfg.Size, cfg.AvoidCenter, cfg.AvoidRadiusM = 3000, driver.Location{Lat: 1.35, Lng: 103.8}, 3000
	fleet, err := NewFleet(cfg, &stateDrivers{d: map[string]driver.Driver{}})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range fleet.locs {
		if DistanceM(cfg.AvoidCenter, l) <= cfg.AvoidRadiusM {
			t.Fatalf("driver %d starts %.0f m from the centre", i, DistanceM(cfg.AvoidCenter, l))
		}
	}
}
