package spampede

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/geocell"
)

// memStore is an in-memory Store; the Redis one is tested on a real cluster
// in redisstore.
type memStore struct {
	mu     sync.Mutex
	counts map[string]int64
	err    error
	delay  time.Duration
	reads  int
	writes []int64 // n of each Record
	// recordDeadline is the deadline of the last Record's context, and
	// whether it had one.
	recordDeadline    time.Time
	recordHasDeadline bool
}

func newMemStore() *memStore { return &memStore{counts: map[string]int64{}} }

func (m *memStore) Counts(ctx context.Context, k Key, b int64) (int64, int64, error) {
	m.mu.Lock()
	m.reads++
	err, delay := m.err, m.delay
	cur, prev := m.counts[fmt.Sprint(k, b)], m.counts[fmt.Sprint(k, b-1)]
	m.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	return cur, prev, err
}

func (m *memStore) Record(ctx context.Context, keys []Key, b, n int64, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recordDeadline, m.recordHasDeadline = ctx.Deadline()
	if m.err != nil {
		return m.err
	}
	for _, k := range keys {
		m.counts[fmt.Sprint(k, b)] += n
	}
	m.writes = append(m.writes, n)
	return nil
}

var (
	// t0 is the start of a 60 s bucket.
	t0   = time.Unix(1_800_000_000-1_800_000_000%60, 0).UTC()
	home = struct{ lat, lng float64 }{1.3000, 103.8000}
)

func testRules(edit func(*Rule)) RuleSet {
	r := Rule{Name: "sg", MinLat: 1, MaxLat: 2, MinLng: 103, MaxLng: 105, CellBits: 30, BucketSeconds: 60, Threshold: 5, HoldDownSeconds: 30}
	if edit != nil {
		edit(&r)
	}
	return RuleSet{Version: 1, Rules: []Rule{r}}
}

func newFilter(t *testing.T, store Store, rs RuleSet) *Filter {
	t.Helper()
	f, err := New(DefaultConfig(), store, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func record(t *testing.T, f *Filter, n int, lat, lng float64, at time.Time) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := f.RecordUnallocated(context.Background(), "car", lat, lng, at); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFilterDecisions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		rules    func(*Rule)
		recorded int           // unallocated bookings recorded at t0 at home
		at       time.Duration // when the booking arrives, after t0
		want     Outcome
	}{
		{"quiet cell admits", nil, 0, time.Second, Admitted},
		{"one under the threshold admits", nil, 4, time.Second, Admitted},
		{"at the threshold trips", nil, 5, time.Second, Rejected},
		{"shadow rule admits and says so", func(r *Rule) { r.Shadow = true }, 5, time.Second, ShadowRejected},
		// 5 recorded at t0; 15 s into the next bucket 3/4 of them still count: 3.75 < 5.
		{"previous bucket is weighted, not dropped", nil, 5, 75 * time.Second, Admitted},
		{"previous bucket still trips just after the boundary", nil, 6, 61 * time.Second, Rejected},
		{"two buckets later the cell is quiet", nil, 5, 121 * time.Second, Admitted},
		{"service not covered by the rule", func(r *Rule) { r.Services = []string{"bike"} }, 5, time.Second, NoRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			f := newFilter(t, store, testRules(tt.rules))
			record(t, f, tt.recorded, home.lat, home.lng, t0)
			got := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(tt.at))
			if got.Outcome != tt.want {
				t.Fatalf("Admit = %s (count %.2f), want %s", got.Outcome, got.Count, tt.want)
			}
			if got.Admit() != (tt.want != Rejected && tt.want != RejectedCached) {
				t.Errorf("Admit() = %v for %s", got.Admit(), got.Outcome)
			}
		})
	}
}

func TestTrippedCellIsCachedAndHeldDown(t *testing.T) {
	store := newMemStore()
	f := newFilter(t, store, testRules(nil)) // hold-down 30 s
	record(t, f, 5, home.lat, home.lng, t0)
	ctx := context.Background()
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Rejected || d.RetryAfter != 30*time.Second {
		t.Fatalf("first = %s retry %s, want rejected, retry 30s", d.Outcome, d.RetryAfter)
	}
	reads := store.reads
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(10*time.Second)); d.Outcome != RejectedCached || d.RetryAfter != 21*time.Second {
		t.Fatalf("second = %s retry %s, want rejected_cached, retry 21s", d.Outcome, d.RetryAfter)
	}
	if store.reads != reads {
		t.Errorf("a cached rejection read the store")
	}
	// Two buckets later the counts are gone, but the hold-down was shorter:
	// now the cell re-opens.
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(125*time.Second)); d.Outcome != Admitted {
		t.Errorf("after hold-down and two buckets: %s, want admitted", d.Outcome)
	}
	if cells := f.TrippedCells(t0.Add(10*time.Second), 20); len(cells) != 0 {
		// The cache entry was removed by the admission above at 125 s.
		t.Logf("tripped cells: %+v", cells)
	}
}

func TestHoldDownOutlastsTheBucket(t *testing.T) {
	store := newMemStore()
	f := newFilter(t, store, testRules(func(r *Rule) { r.BucketSeconds = 10; r.HoldDownSeconds = 60 }))
	record(t, f, 5, home.lat, home.lng, t0)
	ctx := context.Background()
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Rejected {
		t.Fatalf("= %s, want rejected", d.Outcome)
	}
	// 40 s later the 10 s buckets are long empty; the hold-down keeps it closed.
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(41*time.Second)); d.Outcome != RejectedCached {
		t.Errorf("within hold-down = %s, want rejected_cached", d.Outcome)
	}
}

// TestHotspotStraddlingACellEdgeTrips puts half the unallocated bookings on
// each side of a cell edge: neither cell alone reaches the threshold, but
// each cell counts its 3 × 3 block.
func TestHotspotStraddlingACellEdgeTrips(t *testing.T) {
	store := newMemStore()
	f := newFilter(t, store, testRules(func(r *Rule) { r.Threshold = 6 }))
	cell, _ := geocell.Of(home.lat, home.lng, 30)
	box := cell.Bounds()
	west, east := box.MaxLng-0.0001, box.MaxLng+0.0001
	record(t, f, 3, home.lat, west, t0)
	record(t, f, 3, home.lat, east, t0)
	for _, lng := range []float64{west, east} {
		if d := f.Admit(context.Background(), "car", home.lat, lng, t0.Add(time.Second)); d.Outcome != Rejected {
			t.Errorf("booking at lng %.4f = %s (count %.1f), want rejected", lng, d.Outcome, d.Count)
		}
	}
	// Two cells away the block does not reach the hotspot.
	far := box.MaxLng + 3*(box.MaxLng-box.MinLng)
	if d := f.Admit(context.Background(), "car", home.lat, far, t0.Add(time.Second)); d.Outcome != Admitted {
		t.Errorf("two cells away = %s (count %.1f), want admitted", d.Outcome, d.Count)
	}
}

func TestFailOpen(t *testing.T) {
	ctx := context.Background()
	t.Run("store error admits", func(t *testing.T) {
		store := newMemStore()
		store.err = errors.New("redis down")
		f := newFilter(t, store, testRules(nil))
		if d := f.Admit(ctx, "car", home.lat, home.lng, t0); d.Outcome != FailOpen || !d.Admit() {
			t.Fatalf("= %s, want fail_open", d.Outcome)
		}
	})
	t.Run("slow store admits at the deadline, then the breaker skips it", func(t *testing.T) {
		store := newMemStore()
		store.delay = time.Second
		cfg := DefaultConfig()
		cfg.StoreTimeout = time.Millisecond
		f, _ := New(cfg, store, testRules(nil), nil)
		for i := 0; i < cfg.BreakerFailures; i++ {
			if d := f.Admit(ctx, "car", home.lat, home.lng, t0); d.Outcome != FailOpen {
				t.Fatalf("slow store: %s, want fail_open", d.Outcome)
			}
		}
		reads := store.reads
		if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(100*time.Millisecond)); d.Outcome != FailOpen || store.reads != reads {
			t.Fatalf("open breaker: %s, store reads %d→%d; want fail_open without a read", d.Outcome, reads, store.reads)
		}
		store.mu.Lock()
		store.delay = 0
		store.mu.Unlock()
		if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(2*time.Second)); d.Outcome != Admitted {
			t.Fatalf("after the cooldown the probe should reach the store: %s", d.Outcome)
		}
	})
}

// Counting a booking whose first attempt found no driver happens before
// its 201 is sent (first-miss), so RecordMiss waits for the counters no
// longer than CountTimeout, whatever the caller's context, and not at all
// while the breaker says they keep failing: a slow shard of counters must
// not slow every booking that misses (a reviewer's finding: it waited the
// router's whole timeout, a second, with the breaker open too). A worker's
// count of a booking given up (RecordUnallocated, deadline mode) waits as
// its caller allows: nothing waits on it, and a count cut short is lost.
func TestCountingABookingWithoutADriverIsBounded(t *testing.T) {
	ctx := context.Background() // as the booking's, detached from the request
	t.Run("a miss within CountTimeout", func(t *testing.T) {
		store := newMemStore()
		f := newFilter(t, store, testRules(nil))
		before := time.Now()
		if err := f.RecordMiss(ctx, "car", home.lat, home.lng, t0); err != nil {
			t.Fatal(err)
		}
		if !store.recordHasDeadline || store.recordDeadline.After(time.Now().Add(f.cfg.CountTimeout)) || store.recordDeadline.Before(before) {
			t.Fatalf("Record's deadline %v (set: %v), want within %v of the call", store.recordDeadline, store.recordHasDeadline, f.cfg.CountTimeout)
		}
	})
	t.Run("a booking given up, as its caller allows", func(t *testing.T) {
		store := newMemStore()
		f := newFilter(t, store, testRules(nil))
		if err := f.RecordUnallocated(ctx, "car", home.lat, home.lng, t0); err != nil {
			t.Fatal(err)
		}
		if store.recordHasDeadline {
			t.Fatalf("Record's deadline %v, want the caller's (none)", store.recordDeadline)
		}
	})
	openBreaker := func(t *testing.T) (*memStore, *Filter) {
		store := newMemStore()
		store.err = errors.New("redis down")
		f := newFilter(t, store, testRules(nil))
		for range f.cfg.BreakerFailures {
			f.Admit(ctx, "car", home.lat, home.lng, t0)
		}
		store.mu.Lock()
		store.err = nil
		store.mu.Unlock()
		return store, f
	}
	t.Run("no miss while the breaker is open", func(t *testing.T) {
		store, f := openBreaker(t)
		if err := f.RecordMiss(ctx, "car", home.lat, home.lng, t0.Add(100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if len(store.writes) != 0 {
			t.Fatalf("the breaker is open, yet the count was sent: %v", store.writes)
		}
	})
	t.Run("a miss after the cooldown leaves the probe to admission", func(t *testing.T) {
		// A count that took the half-open probe would never give it back
		// (it does not feed the breaker): admission would fail open for good.
		store, f := openBreaker(t)
		after := t0.Add(f.cfg.BreakerCooldown + time.Second)
		if err := f.RecordMiss(ctx, "car", home.lat, home.lng, after); err != nil || len(store.writes) != 1 {
			t.Fatalf("after the cooldown: %v, writes %v; want the count sent", err, store.writes)
		}
		for i := range 3 {
			if d := f.Admit(ctx, "car", home.lat, home.lng, after); d.Outcome != Admitted {
				t.Fatalf("admission %d after the cooldown: %s, want admitted by the probe's read", i, d.Outcome)
			}
		}
	})
}

func TestRulesReloadTakesEffect(t *testing.T) {
	store := newMemStore()
	f := newFilter(t, store, testRules(nil))
	record(t, f, 5, home.lat, home.lng, t0)
	if err := f.SetRules(testRules(func(r *Rule) { r.Threshold = 100 })); err != nil {
		t.Fatal(err)
	}
	if d := f.Admit(context.Background(), "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Admitted {
		t.Errorf("after raising the threshold: %s, want admitted", d.Outcome)
	}
	if err := f.SetRules(testRules(func(r *Rule) { r.Threshold = 0 })); err == nil {
		t.Error("an invalid rule set was accepted")
	}
}

// A rule edited after a cell tripped under it (PUT /v1/spampede/rules,
// installed by every instance within a second) decides the cell at once,
// as it does on an instance that never tripped it: the trip cached under
// the old rule no longer holds (a reviewer found the old one kept, up to
// its hold-down of an hour, here alone). The same rule stored again as a
// new version keeps the trip.
func TestACellTrippedBeforeARuleEditFollowsTheEditedRule(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(*Rule)
		want Outcome // this instance's decision, 5 s after the trip
	}{
		{"turned to shadow", func(r *Rule) { r.Shadow = true }, ShadowRejected},
		{"threshold raised", func(r *Rule) { r.Threshold = 100 }, Admitted},
		{"hold-down shortened", func(r *Rule) { r.HoldDownSeconds = 1 }, Rejected},
		{"stored again unchanged", func(*Rule) {}, RejectedCached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			old := func(r *Rule) { r.HoldDownSeconds = 600 }
			f := newFilter(t, store, testRules(old))
			record(t, f, 5, home.lat, home.lng, t0)
			if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Rejected {
				t.Fatalf("before the edit: %s, want rejected", d.Outcome)
			}
			rs := testRules(func(r *Rule) { old(r); tc.edit(r) })
			rs.Version = 2
			if err := f.SetRules(rs); err != nil {
				t.Fatal(err)
			}
			other := newFilter(t, store, rs) // another instance: same store, same rules, nothing cached
			at := t0.Add(5 * time.Second)
			mine, theirs := f.Admit(ctx, "car", home.lat, home.lng, at), other.Admit(ctx, "car", home.lat, home.lng, at)
			if mine.Outcome != tc.want {
				t.Errorf("this instance: %s (retry in %s), want %s", mine.Outcome, mine.RetryAfter, tc.want)
			}
			if tc.want != RejectedCached && mine.Outcome != theirs.Outcome {
				t.Errorf("this instance %s, another on the same rules %s", mine.Outcome, theirs.Outcome)
			}
			// Listed only while it stands under the rules in force (the
			// edited rule's own trips, made again, are listed anew).
			if err := f.SetRules(testRules(func(r *Rule) { old(r); r.Threshold = 99 })); err != nil {
				t.Fatal(err)
			}
			if cells := f.TrippedCells(at, 10); len(cells) != 0 {
				t.Errorf("tripped cells under rules edited since: %+v, want none listed", cells)
			}
		})
	}
}

// A full cache makes room by dropping trips made under rules since
// edited, not only those over: such a trip, whose cell the edit may have
// renamed (its cell bits), is never looked up again to be dropped, and it
// would keep the trips made under the rules in force out of the cache.
func TestAFullCacheDropsTripsUnderEditedRules(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.MaxTrippedCells = 1
	store := newMemStore()
	f, err := New(cfg, store, testRules(func(r *Rule) { r.HoldDownSeconds = 600 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	record(t, f, 5, home.lat, home.lng, t0)
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Rejected {
		t.Fatalf("under the first rules: %s, want rejected", d.Outcome)
	}
	edited := testRules(func(r *Rule) { r.HoldDownSeconds, r.CellBits = 600, 28 })
	edited.Version = 2
	if err := f.SetRules(edited); err != nil {
		t.Fatal(err)
	}
	record(t, f, 5, home.lat, home.lng, t0.Add(2*time.Second))
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(3*time.Second)); d.Outcome != Rejected {
		t.Fatalf("under the edited rules: %s, want rejected", d.Outcome)
	}
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(4*time.Second)); d.Outcome != RejectedCached {
		t.Errorf("again: %s, want rejected_cached (the trip under the edited rules cached)", d.Outcome)
	}
}

// same compares every field of a rule: a field added to Rule and left
// out of same would let a trip outlive an edit of it.
func TestRuleSameSeesEveryField(t *testing.T) {
	base := testRules(func(r *Rule) { r.Services = []string{"car"} }).Rules[0]
	if !base.same(base) {
		t.Fatal("a rule is not the same as itself")
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		edited := base
		f := reflect.ValueOf(&edited).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Float64:
			f.SetFloat(f.Float() + 1)
		case reflect.Int, reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.Uint, reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.Set(reflect.Append(reflect.ValueOf(slices.Clone(base.Services)), reflect.ValueOf("bike")))
		default:
			t.Fatalf("field %s is a %s: teach this test (and same) about it", v.Type().Field(i).Name, f.Kind())
		}
		if base.same(edited) {
			t.Errorf("a rule whose %s differs is the same to same", v.Type().Field(i).Name)
		}
	}
	noServices, empty := base, base
	noServices.Services, empty.Services = nil, []string{}
	if !noServices.same(empty) {
		t.Error("no services and an empty list differ")
	}
}

func TestParseRuleSet(t *testing.T) {
	good := `{"version":2,"rules":[{"name":"sg","min_lat":1.1,"max_lat":1.5,"min_lng":103.5,"max_lng":104.1,"cell_bits":30,"bucket_seconds":60,"threshold":20,"hold_down_seconds":60}]}`
	if rs, err := ParseRuleSet([]byte(good)); err != nil || rs.Version != 2 || len(rs.Rules) != 1 {
		t.Fatalf("ParseRuleSet(good) = %+v, %v", rs, err)
	}
	bad := map[string]string{
		"unknown field":  `{"rules":[],"extra":1}`,
		"inverted box":   `{"rules":[{"name":"x","min_lat":2,"max_lat":1,"min_lng":103,"max_lng":104,"cell_bits":30,"bucket_seconds":60,"threshold":1}]}`,
		"zero threshold": `{"rules":[{"name":"x","min_lat":1,"max_lat":2,"min_lng":103,"max_lng":104,"cell_bits":30,"bucket_seconds":60,"threshold":0}]}`,
		"bad precision":  `{"rules":[{"name":"x","min_lat":1,"max_lat":2,"min_lng":103,"max_lng":104,"cell_bits":60,"bucket_seconds":60,"threshold":1}]}`,
		"duplicate name": `{"rules":[` + rule("x") + `,` + rule("x") + `]}`,
		"not json":       `rules`,
	}
	for name, in := range bad {
		if _, err := ParseRuleSet([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func rule(name string) string {
	return `{"name":"` + name + `","min_lat":1,"max_lat":2,"min_lng":103,"max_lng":104,"cell_bits":30,"bucket_seconds":60,"threshold":1}`
}

func FuzzParseRuleSet(f *testing.F) {
	f.Add([]byte(`{"rules":[` + rule("a") + `]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := ParseRuleSet(b)
		if err == nil {
			if verr := rs.Validate(); verr != nil {
				t.Fatalf("parsed but invalid: %v", verr)
			}
		}
	})
}

// A tripped cell counts every n-th booking it turns away as a miss, so a
// storm that goes on keeps its cell tripped past the hold-down instead of
// letting a threshold's worth of bookings through each time it ends.
func TestTurnedAwayBookingsKeepAStormyCellTripped(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		every       int
		turnedAway  int // bookings turned away during the hold-down
		wantCounted int64
		wantAfter   Outcome // the first booking once the hold-down (30 s) has passed
	}{
		{"every 10th counts: the storm keeps it closed", 10, 100, 10, Rejected},
		{"counting off: the cell reopens", 0, 100, 0, Admitted},
		{"a calm cell reopens even when counting", 10, 3, 0, Admitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			cfg := DefaultConfig()
			cfg.CountRejectedEvery = tt.every
			f, err := New(cfg, store, testRules(nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			record(t, f, 5, home.lat, home.lng, t0) // trips at the threshold of 5
			if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Rejected {
				t.Fatalf("first admission %s, want rejected", d.Outcome)
			}
			for i := 0; i < tt.turnedAway; i++ {
				at := t0.Add(2*time.Second + time.Duration(i)*70*time.Millisecond)
				if d := f.Admit(ctx, "car", home.lat, home.lng, at); d.Outcome != RejectedCached {
					t.Fatalf("admission %d during the hold-down: %s", i, d.Outcome)
				}
			}
			// 90 s in, bucket 0 weighs 1/2: the original 5 misses alone
			// give 2.5 < 5; with the 10 counted rejections, at least 7.5
			// (those not yet written are written as the cell reopens).
			if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(90*time.Second)); d.Outcome != tt.wantAfter {
				t.Errorf("after the hold-down: %s (count %.1f), want %s", d.Outcome, d.Count, tt.wantAfter)
			}
			cell, _ := geocell.Of(home.lat, home.lng, 30)
			cur, prev, _ := store.Counts(ctx, Key{Service: "car", Cell: cell}, geocell.Bucket(t0.Add(90*time.Second), mustBucket(t, 60)))
			if got := cur + prev - 5; got != tt.wantCounted {
				t.Errorf("counted %d turned-away bookings, want %d", got, tt.wantCounted)
			}
		})
	}
}

// However fast a tripped cell turns bookings away, it writes what it
// counted at most once a second: a storm's rate does not become Redis's.
func TestCountedRejectionsAreWrittenOnceASecond(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	f, err := New(DefaultConfig(), store, testRules(nil), nil) // every 10th counts
	if err != nil {
		t.Fatal(err)
	}
	record(t, f, 5, home.lat, home.lng, t0)
	if d := f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second)); d.Outcome != Rejected {
		t.Fatalf("first admission %s, want rejected", d.Outcome)
	}
	store.writes = nil
	for i := range 1000 { // 1,000 in the next second: 100 counted
		f.Admit(ctx, "car", home.lat, home.lng, t0.Add(time.Second+time.Duration(i)*time.Millisecond))
	}
	f.Admit(ctx, "car", home.lat, home.lng, t0.Add(2200*time.Millisecond))
	// The first counted one at once; the 99 counted since, a second later.
	if fmt.Sprint(store.writes) != "[1 99]" {
		t.Errorf("writes of counted rejections %v, want [1 99]", store.writes)
	}
}

func mustBucket(t *testing.T, seconds int) geocell.BucketSize {
	t.Helper()
	b, err := geocell.NewBucketSize(time.Duration(seconds) * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
