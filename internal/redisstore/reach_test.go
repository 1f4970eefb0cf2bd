package redisstore_test

import (
	"context"
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
	reports := []fleet.ReachReport{
		{ID: "gone", Slots: 5461, At: now.Add(-5 * time.Second), Until: now.Add(-2 * time.Second)},
		{ID: "a", Slots: 16384, At: now.Add(-2 * time.Second), Until: now.Add(time.Second)},
		{ID: "a", Slots: 10923, At: now.Add(-time.Second), Until: now.Add(2 * time.Second)}, // a's latest
		{ID: "b", Slots: 16384, At: now, Until: now.Add(3 * time.Second)},
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
		if g.Slots != w.Slots || !g.At.Equal(w.At) || !g.Until.Equal(w.Until) {
			t.Errorf("report of %s = %+v, want %+v", g.ID, g, w)
		}
	}
	// Each shard holds them all, and no longer the one that ran out
	// (dropped by the reports written after it ended).
	keys := r.ShardKeys("apollo:fleet:reach:")
	if len(keys) != 3 {
		t.Fatalf("ShardKeys = %v, want one per shard of 3", keys)
	}
	for _, k := range keys {
		res := r.Exec(ctx, []redisroute.Cmd{{Args: []any{"HLEN", k}, Key: k, Fresh: true}})[0]
		if n, _ := res.Val.(int64); res.Err != nil || n != 2 {
			t.Errorf("%s holds %v reports (%v), want 2: a and b", k, res.Val, res.Err)
		}
	}
}
