package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// Every instance's latest report is read back from any one shard, and a
// report that ran out is neither read nor kept.
func TestReachReportsAreKeptOnEveryShardUntilTheyRunOut(t *testing.T) {
	c := clustertest.Start(t)
	r := newRouterFor(t, c)
	s := redisstore.NewReaches(r)
	ctx := context.Background()
	now := time.UnixMilli(time.Now().UnixMilli())
	all, two := fleet.SlotSetOf([][2]int{{0, 16383}}), fleet.SlotSetOf([][2]int{{0, 5460}, {10923, 16383}})
	reports := []fleet.ReachReport{
		{ID: "gone", Slots: fleet.SlotSetOf([][2]int{{5461, 10922}}), At: now.Add(-5 * time.Second), Until: now.Add(-2 * time.Second)},
		{ID: "a", Slots: all, Primaries: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}, At: now.Add(-2 * time.Second), Until: now.Add(time.Second)},
		{ID: "a", Slots: two, Primaries: []string{"10.0.0.1:6379", "[fe80::1%eth0]:6379"}, At: now.Add(-time.Second), Until: now.Add(2 * time.Second)}, // a's latest
		{ID: "b", Slots: all, At: now, Until: now.Add(3 * time.Second)},                                                                                // none answered by name: a view with none
	}
	for _, rep := range reports {
		if err := s.ReportReach(ctx, rep); err != nil {
			t.Fatalf("ReportReach(%+v): %v", rep, err)
		}
	}
	got, err := s.Reaches(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fleet.ReachReport{"a": reports[2], "b": reports[3]}
	if len(got) != len(want) {
		t.Fatalf("Reaches = %+v, want a's latest and b's", got)
	}
	for _, g := range got {
		w := want[g.ID]
		if g.Slots != w.Slots || !slices.Equal(g.Primaries, w.Primaries) || !g.At.Equal(w.At) || !g.Until.Equal(w.Until) {
			t.Errorf("report of %s = %s %q %v %v, want %s %q %v %v", g.ID, g.Slots, g.Primaries, g.At, g.Until, w.Slots, w.Primaries, w.At, w.Until)
		}
	}
	// Each shard holds them all, and no longer the one that ran out
	// (dropped by the reports written after it ended, by the node's
	// clock), and lets the hash expire if nobody writes it again.
	keys := r.ShardKeys("apollo:fleet:reach:")
	if len(keys) != 3 {
		t.Fatalf("ShardKeys = %v, want one per shard of 3", keys)
	}
	for _, k := range keys {
		res := r.Exec(ctx, []redisroute.Cmd{{Args: []any{"HLEN", k}, Key: k, Fresh: true}})[0]
		if n, _ := res.Val.(int64); res.Err != nil || n != 2 {
			t.Errorf("%s holds %v reports (%v), want 2: a and b", k, res.Val, res.Err)
		}
		ttl := r.Exec(ctx, []redisroute.Cmd{{Args: []any{"PTTL", k}, Key: k, Fresh: true}})[0]
		if ms, _ := ttl.Val.(int64); ttl.Err != nil || ms <= 0 || ms > time.Minute.Milliseconds() {
			t.Errorf("%s expires in %v ms (%v), want within a minute", k, ttl.Val, ttl.Err)
		}
	}
	// An instance that drains withdraws its reports from every shard.
	if err := s.ForgetReach(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	got, err = s.Reaches(ctx, now)
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Errorf("after b withdrew: %+v, %v; want a's alone", got, err)
	}
}
