package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// staleAfter is the default StaleAfter, past which a silent driver is dead.
var staleAfter = driver.DefaultRules().StaleAfter

// TestLiveDriversAreFoundBehindACrowdOfSilentOnes is issue 13: forty
// drivers heartbeat once next to the pickup and fall silent; three live
// drivers heartbeat a kilometre away in the same cell after the forty went
// stale. The index search takes the nearest few candidates per cell, so if
// the dead stayed indexed they would be all it returned. The live drivers'
// heartbeats sweep the dead out of the index.
func TestLiveDriversAreFoundBehindACrowdOfSilentOnes(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, r := newStore(t, c)
	ctx := context.Background()
	lat, lng, cell := cellCentre(t, 1.3, 103.8)
	const dead, live = 40, 3
	for i := 0; i < dead; i++ { // 0–220 m north
		online(t, s, fmt.Sprintf("dead-%02d", i), lat+float64(i)*0.00005, lng, t0, "car")
	}
	later := t0.Add(staleAfter + 10*time.Second)
	for i := 0; i < live; i++ { // 1.1–1.3 km south, same cell
		online(t, s, fmt.Sprintf("live-%d", i), lat-0.01-float64(i)*0.001, lng, later, "car")
	}
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: lat, Lng: lng, RadiusM: 2000, Service: "car", Limit: 3}, later.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); fmt.Sprint(got) != "[live-0 live-1 live-2]" {
		t.Errorf("Nearby = %v, want the live drivers [live-0 live-1 live-2] behind %d silent ones", got, dead)
	}
	for _, key := range []string{redisstore.GeoKey(cell), livenessKey(cell)} {
		if got := members(t, r, key); fmt.Sprint(got) != "[live-0 live-1 live-2]" {
			t.Errorf("%s holds %d members %v, want only the live drivers", key, len(got), got)
		}
	}
}

// TestASearchSkipsAndSweepsSilentDriversNobodyElseCleansUp: silent drivers
// in a cell where nobody heartbeats any more are known dead from the cell's
// liveness set, which the search reads in the same round trip as the index:
// it reads none of their records, and sweeps them out after its answer.
func TestASearchSkipsAndSweepsSilentDriversNobodyElseCleansUp(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, r := sweepingStore(t, c, noExtraRequests)
	ctx := context.Background()
	// The pickup is 100 m inside its cell's east edge; the live drivers are
	// across the edge, in the next cell.
	box := cellOf(t, 1.3, 103.8).Bounds()
	lat, lng := (box.MinLat+box.MaxLat)/2, box.MaxLng-0.0009
	cell := cellOf(t, lat, lng).String()
	const dead, live = 10, 3
	for i := 0; i < dead; i++ { // 0–100 m west
		online(t, s, fmt.Sprintf("dead-%02d", i), lat, lng-float64(i)*0.0001, t0, "car")
	}
	later := t0.Add(staleAfter + 10*time.Second)
	for i := 0; i < live; i++ { // 300–500 m east, in the next cell
		online(t, s, fmt.Sprintf("live-%d", i), lat, lng+0.0036+float64(i)*0.0009, later, "car")
	}
	if cellOf(t, lat, lng+0.0036).String() == cell {
		t.Fatalf("the live drivers are in the pickup's cell %s; the test needs them across the edge", cell)
	}
	before := hmgets(t, c)
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: lat, Lng: lng, RadiusM: 1000, Service: "car", Limit: 3}, later.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	read := hmgets(t, c) - before
	if got := ids(res); fmt.Sprint(got) != "[live-0 live-1 live-2]" {
		t.Errorf("Nearby = %v, want [live-0 live-1 live-2]", got)
	}
	if read > live {
		t.Errorf("read %d driver records, want only the %d live ones: the silent ones are known dead from the index", read, live)
	}
	for _, key := range []string{redisstore.GeoKey(cell), livenessKey(cell)} {
		if got := members(t, r, key); len(got) != 0 {
			t.Errorf("after the search %s still holds %v", key, got)
		}
	}
}

// TestASearchSweepsIndexedDriversWhoseRecordIsMissingOrStale: members the
// liveness set knows nothing about (written by a transition after their
// liveness was swept, or by hand) are checked against their records, and a
// missing or stale record takes them out of the index. A live driver stays.
func TestASearchSweepsIndexedDriversWhoseRecordIsMissingOrStale(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, r := sweepingStore(t, c)
	ctx := context.Background()
	lat, lng, cell := cellCentre(t, 1.3, 103.8)
	geo := redisstore.GeoKey(cell)
	later := t0.Add(staleAfter + 10*time.Second)

	// lapsed is reserved, falls silent, and is declined after its liveness
	// was swept: the decline puts it back in the index without liveness.
	online(t, s, "lapsed", lat+0.0001, lng, t0, "car")
	if _, err := s.Apply(ctx, "lapsed", driver.Transition{Event: driver.EventReserve, BookingID: "b1", Until: later.Add(time.Minute)}, t0); err != nil {
		t.Fatal(err)
	}
	online(t, s, "live", lat+0.003, lng, later, "car") // its heartbeat sweeps lapsed's liveness
	if _, err := s.Apply(ctx, "lapsed", driver.Transition{Event: driver.EventDecline}, later); err != nil {
		t.Fatal(err)
	}
	// ghost is in the index with no record at all.
	if res := r.Do(ctx, redisroute.Write("GEOADD", geo, lng, lat+0.0002, "ghost")); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := members(t, r, geo); fmt.Sprint(got) != "[ghost lapsed live]" {
		t.Fatalf("before the search the index holds %v, want [ghost lapsed live]", got)
	}
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: lat, Lng: lng, RadiusM: 1000, Service: "car", Limit: 5}, later.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); fmt.Sprint(got) != "[live]" {
		t.Errorf("Nearby = %v, want [live]", got)
	}
	if got := members(t, r, geo); fmt.Sprint(got) != "[live]" {
		t.Errorf("after the search the index holds %v, want [live]", got)
	}
}

// TestBusyDriversKeepTheirLivenessAndMovesLeaveNoTrace: a reserved driver
// is out of the geo set but its heartbeats keep its liveness, so other
// heartbeats do not sweep it and a decline puts it back live; a driver who
// crosses into another cell leaves neither set of the old one behind.
func TestBusyDriversKeepTheirLivenessAndMovesLeaveNoTrace(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	s, r := newStore(t, c)
	ctx := context.Background()
	lat, lng, cell := cellCentre(t, 1.3, 103.8)
	far, _, farCell := cellCentre(t, 1.4, 103.8)
	later := t0.Add(staleAfter + 10*time.Second)
	sets := func(cell string) string {
		return fmt.Sprintf("geo %v liveness %v", members(t, r, redisstore.GeoKey(cell)), members(t, r, livenessKey(cell)))
	}
	steps := []struct {
		what      string
		do        func() error
		cell, now string
	}{
		{"on line", func() error { online(t, s, "d1", lat, lng, t0, "car"); return nil }, cell, "geo [d1] liveness [d1]"},
		{"reserved", apply(s, "d1", driver.Transition{Event: driver.EventReserve, BookingID: "b1", Until: later.Add(time.Minute)}), cell, "geo [] liveness [d1]"},
		{"reserved, heartbeating past StaleAfter", heartbeat(s, "d1", lat, lng, later), cell, "geo [] liveness [d1]"},
		{"an offline driver's heartbeat sweeps, sparing d1", heartbeat(s, "d2", lat, lng, later.Add(time.Second)), cell, "geo [] liveness [d1 d2]"},
		{"declined", apply(s, "d1", driver.Transition{Event: driver.EventDecline}), cell, "geo [d1] liveness [d1 d2]"},
		{"moved away", heartbeat(s, "d1", far, lng, later.Add(2*time.Second)), cell, "geo [] liveness [d2]"},
		{"arrived", func() error { return nil }, farCell, "geo [d1] liveness [d1]"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if got := sets(st.cell); got != st.now {
			t.Errorf("%s: cell %s holds %s, want %s", st.what, st.cell, got, st.now)
		}
	}
	res, err := s.Nearby(ctx, redisstore.NearbyQuery{Lat: far, Lng: lng, RadiusM: 500, Service: "car", Limit: 1}, later.Add(3*time.Second))
	if err != nil || fmt.Sprint(ids(res)) != "[d1]" {
		t.Errorf("Nearby after the move = %v, %v; want [d1]", ids(res), err)
	}
}

// TestDriverHashesExpireUnlessTheyHeartbeat: a driver's hash carries a TTL
// that every heartbeat refreshes and a transition keeps, so a driver who
// went silent for good is eventually forgotten. The TTL is asserted, not
// waited for.
func TestDriverHashesExpireUnlessTheyHeartbeat(t *testing.T) {
	c := clustertest.Start(t)
	s, r := newStore(t, c)
	ctx := context.Background()
	key := redisstore.DriverKey("d1")
	ttl := time.Hour // the default
	pttl := func() time.Duration {
		t.Helper()
		res := r.Do(ctx, redisroute.Cmd{Args: []any{"PTTL", key}, Key: key, Fresh: true})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		ms, _ := res.Val.(int64)
		return time.Duration(ms) * time.Millisecond
	}
	inRange := func(what string) {
		t.Helper()
		if got := pttl(); got <= ttl-time.Minute || got > ttl {
			t.Errorf("%s: the driver hash expires in %v, want about %v", what, got, ttl)
		}
	}
	if _, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.3, Lng: 103.8}, t0); err != nil {
		t.Fatal(err)
	}
	inRange("first heartbeat")
	if _, err := s.Apply(ctx, "d1", driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, t0); err != nil {
		t.Fatal(err)
	}
	inRange("after go_online")
	if res := r.Do(ctx, redisroute.Write("PEXPIRE", key, 1000)); res.Err != nil {
		t.Fatal(res.Err)
	}
	if _, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.3, Lng: 103.8}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	inRange("the next heartbeat")

	// A driver that goes on line before any heartbeat gets a TTL too.
	key = redisstore.DriverKey("d2")
	if _, err := s.Apply(ctx, "d2", driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, t0); err != nil {
		t.Fatal(err)
	}
	inRange("go_online before any heartbeat")
}

// sweepingStore is a store whose searches wait long enough for their sweep
// that a busy test machine does not make it look lost.
func sweepingStore(t *testing.T, c *localcluster.Cluster, edit ...func(*redisroute.Config)) (*redisstore.Drivers, *redisroute.Router) {
	t.Helper()
	r := newRouterFor(t, c, edit...)
	cfg := redisstore.DefaultConfig()
	cfg.SweepWait = 5 * time.Second
	s, err := redisstore.NewDrivers(r, cfg, driver.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// cellCentre is the centre of the geo index cell holding (lat, lng), and
// the cell's name.
func cellCentre(t *testing.T, lat, lng float64) (float64, float64, string) {
	t.Helper()
	b := cellOf(t, lat, lng).Bounds()
	return (b.MinLat + b.MaxLat) / 2, (b.MinLng + b.MaxLng) / 2, cellOf(t, lat, lng).String()
}

func cellOf(t *testing.T, lat, lng float64) geocell.Cell {
	t.Helper()
	c, err := geocell.Of(lat, lng, redisstore.DefaultConfig().GeoCellBits)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// livenessKey is the documented key of a cell's liveness set (keys.go).
func livenessKey(cell string) string { return "apollo:geohb:{" + cell + "}" }

// members lists a sorted set's members, read from its primary, sorted.
func members(t *testing.T, r *redisroute.Router, key string) []string {
	t.Helper()
	res := r.Do(context.Background(), redisroute.Cmd{Args: []any{"ZRANGE", key, 0, -1}, Key: key, Fresh: true})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	vals, _ := res.Val.([]any)
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		s, _ := v.(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func ids(res redisstore.Nearby) []string {
	var out []string
	for _, d := range res.Drivers {
		out = append(out, d.Driver.ID)
	}
	return out
}
