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
// failRecords. Nothing else is expected of it.
type partRouter struct{ failGeo, failRecords bool }

func (r partRouter) Exec(_ context.Context, cmds []redisroute.Cmd) redisroute.Results {
	out := make(redisroute.Results, len(cmds))
	for i, c := range cmds {
		switch name, _ := c.Args[0].(string); {
		case name == "GEOSEARCH" && r.failGeo, name != "GEOSEARCH" && name != "ZRANGEBYSCORE" && r.failRecords:
			out[i].Err = redisroute.ErrUnavailable
		case name == "GEOSEARCH":
			out[i].Val = []any{[]any{"d1", "12.5"}}
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
}
