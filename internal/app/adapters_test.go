package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/dispatch"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// partRouter answers a nearby search as a cluster with one part down
// would: every geo cell's search finds driver d1 unless failGeo, its
// liveness set is empty, and every read of a driver's record fails when
// failRecords, or answers a record that cannot be decoded when badRecord.
// Nothing else is expected of it.
type partRouter struct{ failGeo, failRecords, badRecord bool }

func (r partRouter) Exec(_ context.Context, cmds []redisroute.Cmd) redisroute.Results {
	out := make(redisroute.Results, len(cmds))
	for i, c := range cmds {
		switch name, _ := c.Args[0].(string); {
		case name == "GEOSEARCH" && r.failGeo, name != "GEOSEARCH" && name != "ZRANGEBYSCORE" && r.failRecords:
			out[i].Err = redisroute.ErrUnavailable
		case name == "GEOSEARCH":
			out[i].Val = []any{[]any{"d1", "12.5"}}
		case name == "HMGET" && r.badRecord:
			out[i].Val = []any{"d1", "car", "bogus", "1.3", "103.8", "0", "", "", "0", "1", ""}
		default:
			out[i].Val = []any{}
		}
	}
	return out
}

func (partRouter) ClockOffset(string) time.Duration { return 0 }
func (partRouter) SameShard(a, b string) bool       { return true }

type reserveNone struct{}

func (reserveNone) Reserve(context.Context, string, string, time.Time, time.Time) error {
	return errors.New("no driver was found to reserve")
}

// A search that could not read part of the area, or the records of the
// drivers it found, has not shown that no driver is free: Allocate must not
// say ErrNoDriver, or the booking is counted by Spampede (first-miss) as
// one that found no driver, and a shard down closes the cells whose index
// it holds while their drivers stand by.
func TestASearchThatCouldNotReadIsNotNoDriver(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    partRouter
	}{
		{"every geo cell's read fails", partRouter{failGeo: true}},
		{"every found driver's record read fails", partRouter{failRecords: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := redisstore.NewDrivers(tc.r, redisstore.DefaultConfig(), driver.DefaultRules())
			if err != nil {
				t.Fatal(err)
			}
			a, err := dispatch.New(dispatch.DefaultConfig(), finder{store}, reserveNone{})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = a.Allocate(context.Background(), "bk-1", "car", driver.Location{Lat: 1.3, Lng: 103.8}, time.Now())
			if err == nil || errors.Is(err, dispatch.ErrNoDriver) {
				t.Fatalf("Allocate = %v, want the read's failure, not ErrNoDriver", err)
			}
			if !errors.Is(err, redisroute.ErrUnavailable) {
				t.Errorf("Allocate = %v, want it to wrap the read's failure", err)
			}
		})
	}
	// A record read but not understood stays so: counting it as a failed
	// read would leave every search around it incomplete, and Spampede
	// would never count a booking there again.
	t.Run("a found driver's record cannot be decoded", func(t *testing.T) {
		store, err := redisstore.NewDrivers(partRouter{badRecord: true}, redisstore.DefaultConfig(), driver.DefaultRules())
		if err != nil {
			t.Fatal(err)
		}
		nb, err := store.Nearby(context.Background(), redisstore.NearbyQuery{Lat: 1.3, Lng: 103.8, RadiusM: 3000, Service: "car", Limit: 10}, time.Now())
		if err != nil || len(nb.FailedDrivers) == 0 {
			t.Fatalf("Nearby = %d failed drivers, %v; want d1 reported", len(nb.FailedDrivers), err)
		}
		a, err := dispatch.New(dispatch.DefaultConfig(), finder{store}, reserveNone{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err = a.Allocate(context.Background(), "bk-1", "car", driver.Location{Lat: 1.3, Lng: 103.8}, time.Now()); !errors.Is(err, dispatch.ErrNoDriver) {
			t.Fatalf("Allocate = %v, want ErrNoDriver", err)
		}
	})
}
