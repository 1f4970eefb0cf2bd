package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A reservation, and the sweep that finds it once it lapsed, need only
// the driver's own shard. The reserved-drivers index was one key, on one
// shard, written before every reservation: while that shard's primary
// hung (or failed over: 15 s by Redis's default node timeout) no driver
// on any shard could be reserved, every allocation of the fleet failed,
// and no lapsed reservation was found. Here the shard that held that key
// hangs, and drivers of the two other shards are reserved and swept.
func TestReservingADriverNeedsOnlyItsOwnShard(t *testing.T) {
	c := clustertest.Start(t)
	s, _ := newStore(t, c)
	ctx := context.Background()
	const primaries = 3
	shardOf := func(key string) int {
		slot := redisroute.Slot(key)
		for i := range primaries {
			if slot < (i+1)*16384/primaries {
				return i
			}
		}
		return primaries - 1
	}
	hung := shardOf("apollo:drv:reserved") // the index's one key, before
	// Four drivers on each side of the boundary between shards 0 and 1
	// (slot 5461), within the 512 slots of one partition's range, where
	// the partition of a driver's slot range is on the other shard for
	// one side or the other; and four more anywhere the hang is not.
	if hung != 2 {
		t.Fatalf("the index's old key is on shard %d; the drivers below assume 2", hung)
	}
	var ids []string
	near := map[string]int{}
	for i := 0; len(ids) < 12; i++ {
		id := fmt.Sprintf("own-%d", i)
		slot := redisroute.Slot(redisstore.DriverKey(id))
		side := "far"
		switch {
		case slot >= 5120 && slot < 5461:
			side = "below"
		case slot >= 5461 && slot < 5632:
			side = "above"
		case shardOf(redisstore.DriverKey(id)) == hung:
			continue
		}
		if near[side] < 4 {
			near[side]++
			ids = append(ids, id)
			online(t, s, id, 1.30, 103.80, t0, "car")
		}
	}
	primary := c.Primary(ctx, hung)
	if err := primary.Pause(); err != nil {
		t.Fatal(err)
	}
	defer primary.Resume()

	until := t0.Add(15 * time.Second)
	for _, id := range ids {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second) // a hang, not a speed
		_, err := s.Apply(rctx, id, driver.Transition{Event: driver.EventReserve, BookingID: "bk-" + id, Until: until}, t0)
		cancel()
		if err != nil {
			t.Fatalf("reserving %s, whose shard is up, while shard %d's primary hangs: %v", id, hung, err)
		}
	}
	// Sweeps a second apart, as the booking workers run them: the first
	// may wait out a request already sent to the hung primary, after
	// which the router ejects it, and the holds of what it claimed end.
	var found []string
	var err error
	now, hold := until.Add(5*time.Second), 10*time.Second
	for sweep := 0; sweep < 3 && len(found) < len(ids); sweep++ {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		var lapsed []driver.Driver
		lapsed, err = s.ClaimLapsed(sctx, now, hold, 100)
		cancel()
		for _, d := range lapsed {
			if !slices.Contains(found, d.ID) { // claimed again once its hold ended
				found = append(found, d.ID)
			}
		}
		now = now.Add(hold)
	}
	slices.Sort(found)
	slices.Sort(ids)
	if !slices.Equal(found, ids) {
		t.Fatalf("three sweeps found %v lapsed (last error %v), want every reserved driver: %v", found, err, ids)
	}
	// Each entry is on its driver's own shard, so that the primary's
	// stream that carries the reservation carried its entry before it.
	if err := primary.Resume(); err != nil {
		t.Fatal(err)
	}
	for sh := range primaries {
		cl := c.Primary(ctx, sh).Client()
		keys, err := cl.Keys(ctx, "apollo:drv:reserved*").Result()
		for _, k := range keys {
			members, err := cl.ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range members {
				if want := shardOf(redisstore.DriverKey(id)); want != sh {
					t.Errorf("%s's entry is in %s on shard %d, its driver on shard %d", id, k, sh, want)
				}
			}
		}
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}
