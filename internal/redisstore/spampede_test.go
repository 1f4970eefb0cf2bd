package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

func newRouterFor(t *testing.T, c *localcluster.Cluster, edit ...func(*redisroute.Config)) *redisroute.Router {
	t.Helper()
	cfg := redisroute.DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	cfg.CallTimeout = 5 * time.Second
	for _, e := range edit {
		e(&cfg)
	}
	r, err := redisroute.New(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestSpampedeCountersCountExactlyAndAlwaysExpire: 50 goroutines record 20
// unallocated bookings each into one hot cell; the count is exact and every
// key the filter wrote carries a TTL.
func TestSpampedeCountersCountExactlyAndAlwaysExpire(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	r := newRouterFor(t, c)
	store := redisstore.NewSpampedeCounters(r)
	rs := spampede.DefaultRuleSet()
	rs.Rules[0].Threshold = 1000
	f, err := spampede.New(spampede.DefaultConfig(), store, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_030, 0)
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := f.RecordUnallocated(context.Background(), "car", 1.30, 103.80, now); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	cell, _ := geocell.Of(1.30, 103.80, rs.Rules[0].CellBits)
	size, _ := geocell.NewBucketSize(time.Minute)
	key := spampede.Key{Service: "car", Cell: cell}
	cur, prev, err := store.Counts(context.Background(), key, geocell.Bucket(now, size))
	if err != nil || cur != 1000 || prev != 0 {
		t.Fatalf("Counts = %d, %d, %v; want exactly 1000, 0", cur, prev, err)
	}
	// The 3 × 3 block: every neighbour counted too, and every key expires.
	keys := append([]geocell.Cell{cell}, cell.Neighbors()...)
	for _, k := range keys {
		name := fmt.Sprintf("apollo:spm:{car:%s}:%d", k, geocell.Bucket(now, size))
		res := r.Do(context.Background(), redisroute.Cmd{Args: []any{"TTL", name}, Key: name, Fresh: true})
		ttl, _ := res.Val.(int64)
		if res.Err != nil || ttl <= 0 || ttl > 130 {
			t.Errorf("TTL %s = %v, %v; want a TTL of about two buckets", name, res.Val, res.Err)
		}
	}
	if d := f.Admit(context.Background(), "car", 1.30, 103.80, now); d.Outcome != spampede.Rejected || d.Count != 1000 {
		t.Errorf("Admit = %s with count %.0f, want rejected at the threshold of 1000", d.Outcome, d.Count)
	}
	// Rejections counted over a second are written as one increment.
	if err := store.Record(context.Background(), []spampede.Key{key}, geocell.Bucket(now, size), 7, time.Minute); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("apollo:spm:{car:%s}:%d", cell, geocell.Bucket(now, size))
	if res := r.Do(context.Background(), redisroute.Cmd{Args: []any{"GET", name}, Key: name, Fresh: true}); res.Err != nil || res.Val != "1007" {
		t.Errorf("after adding 7: GET %s = %v, %v; want 1007", name, res.Val, res.Err)
	}
}

func TestSpampedeRulesRoundTrip(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	store := redisstore.NewSpampedeCounters(newRouterFor(t, c))
	if _, ok, err := store.LoadRules(context.Background()); ok || err != nil {
		t.Fatalf("LoadRules on an empty cluster = %v, %v", ok, err)
	}
	if err := store.SaveRules(context.Background(), []byte(`{"version":7,"rules":[]}`)); err != nil {
		t.Fatal(err)
	}
	rs, ok, err := store.LoadRules(context.Background())
	if !ok || err != nil || rs.Version != 7 {
		t.Fatalf("LoadRules = %+v, %v, %v", rs, ok, err)
	}
}
