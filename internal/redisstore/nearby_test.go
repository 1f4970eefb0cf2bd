package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// TestNearbyReadsRecordsNearestFirstAPageAtATime: busy drivers nearest the
// pickup do not hide an available one farther out, and the search reads
// driver records a page at a time, not every driver the index holds.
func TestNearbyReadsRecordsNearestFirstAPageAtATime(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, _ := newStore(t, c)
	ctx := context.Background()
	const lat, lng = 1.3, 103.8
	const busy, free = 2, 30
	for i := 0; i < busy; i++ { // 100–120 m north
		id := fmt.Sprintf("busy-%02d", i)
		online(t, s, id, lat+0.0009+float64(i)*0.0002, lng, t0, "car")
		if _, err := s.Apply(ctx, id, driver.Transition{Event: driver.EventReserve, BookingID: "b-" + id, Until: t0.Add(time.Minute)}, t0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < free; i++ { // 500–1,800 m south
		online(t, s, fmt.Sprintf("free-%02d", i), lat-0.0045-float64(i)*0.0004, lng, t0, "car")
	}
	before := hmgets(t, c)
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: lat, Lng: lng, RadiusM: 3000, Service: "car", Limit: 3}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	read := hmgets(t, c) - before
	var got []string
	for _, d := range res.Drivers {
		got = append(got, d.Driver.ID)
	}
	if fmt.Sprint(got) != "[free-00 free-01 free-02]" {
		t.Errorf("Nearby = %v, want the three nearest available drivers [free-00 free-01 free-02]", got)
	}
	// A page is 2 × Limit records: the first holds the 2 busy drivers and enough free ones.
	if read > 6 {
		t.Errorf("read %d driver records of the %d indexed to find 3 available, want one page of 6", read, busy+free)
	}
	t.Logf("read %d of %d driver records", read, busy+free)
}

// hmgets is how many HMGETs the cluster's nodes have served.
func hmgets(t *testing.T, c *localcluster.Cluster) int {
	t.Helper()
	total := 0
	for _, n := range c.Nodes() {
		info, err := n.Client().Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_hmget:calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			v, err := strconv.Atoi(calls)
			if err != nil {
				t.Fatalf("commandstats line %q: %v", line, err)
			}
			total += v
		}
	}
	return total
}
