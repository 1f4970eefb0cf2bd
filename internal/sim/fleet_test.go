package sim

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// fakeDrivers records what the fleet sends; the real store is exercised by
// apollo dev's end-to-end test.
type fakeDrivers struct {
	mu     sync.Mutex
	beats  map[string][]driver.Location
	online map[string][]string
}

func (f *fakeDrivers) Heartbeat(_ context.Context, id string, loc driver.Location, _ time.Time) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats[id] = append(f.beats[id], loc)
	return driver.Driver{ID: id}, nil
}

func (f *fakeDrivers) Apply(_ context.Context, id string, tr driver.Transition, _ time.Time) (driver.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.online[id] = tr.Services
	return driver.Driver{ID: id}, nil
}

func TestFleetSeedsEveryDriverInsideTheCity(t *testing.T) {
	f := &fakeDrivers{beats: map[string][]driver.Location{}, online: map[string][]string{}}
	cfg := DefaultFleetConfig()
	cfg.Size = 100
	fleet, err := NewFleet(cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Seed(context.Background(), time.Now, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.beats) != 100 || len(f.online) != 100 {
		t.Fatalf("seeded %d heartbeats and %d go_online, want 100 each", len(f.beats), len(f.online))
	}
	city := cfg.City
	for id, locs := range f.beats {
		l := locs[0]
		if l.Lat < city.MinLat || l.Lat > city.MaxLat || l.Lng < city.MinLng || l.Lng > city.MaxLng {
			t.Errorf("%s seeded outside %s: %+v", id, city.Name, l)
		}
	}
	if f.online[ID(3)][0] != "bike" || f.online[ID(0)][0] != "car" {
		t.Errorf("services: %v %v", f.online[ID(0)], f.online[ID(3)])
	}
}

func TestFleetIsDeterministicForASeed(t *testing.T) {
	cfg := DefaultFleetConfig()
	cfg.Size = 10
	a, _ := NewFleet(cfg, nil)
	b, _ := NewFleet(cfg, nil)
	for i := range a.locs {
		if a.locs[i] != b.locs[i] {
			t.Fatalf("driver %d placed at %v and %v with the same seed", i, a.locs[i], b.locs[i])
		}
	}
}

func TestFleetRunHeartbeatsUntilCancelled(t *testing.T) {
	f := &fakeDrivers{beats: map[string][]driver.Location{}, online: map[string][]string{}}
	cfg := DefaultFleetConfig()
	cfg.Size, cfg.HeartbeatInterval = 20, 100*time.Millisecond
	fleet, _ := NewFleet(cfg, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fleet.Run(ctx, time.Now, nil); close(done) }()
	for {
		f.mu.Lock()
		n := len(f.beats)
		f.mu.Unlock()
		if n == 20 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	for id, locs := range f.beats {
		for _, l := range locs {
			if err := driver.ValidateLocation(l.Lat, l.Lng); err != nil || l.Lat < cfg.City.MinLat || l.Lat > cfg.City.MaxLat {
				t.Errorf("%s moved to %+v", id, l)
			}
		}
	}
}

func TestFleetConfigValidate(t *testing.T) {
	cfg := DefaultFleetConfig()
	cfg.Size = 0
	if cfg.Validate() == nil {
		t.Error("empty fleet accepted")
	}
	cfg = DefaultFleetConfig()
	cfg.City.MinLat = cfg.City.MaxLat
	if cfg.Validate() == nil {
		t.Error("empty city accepted")
	}
}
