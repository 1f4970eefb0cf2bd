package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// naiveStore is the seed's approach, for comparison: one GET of the cell's
// current bucket per booking, no previous bucket, no neighbours, no cache.
type naiveStore struct{ r *redisroute.Router }

func (n naiveStore) Counts(ctx context.Context, k spampede.Key, bucket int64) (int64, int64, error) {
	key := "apollo:naive:{" + k.String() + "}"
	res := n.r.Do(ctx, redisroute.Read("GET", key))
	return 0, 0, res.Err
}

func (naiveStore) Record(context.Context, []spampede.Key, int64, int64, time.Duration) error {
	return nil
}

// BenchmarkSpampedeAdmission prints what one admission decision costs, with
// its p99: the Redis-backed filter on an open cell (one MGET), on a tripped
// cell (cached: no round trip), the naive GET-per-booking filter, and the
// filter with every Redis node paused (fail open at the deadline, then the
// breaker skips Redis).
// Run: go test -run '^$' -bench SpampedeAdmission -benchtime 3s ./internal/redisstore/
func BenchmarkSpampedeAdmission(b *testing.B) {
	c := clustertest.Start(b, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	cfg := redisroute.DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	r, err := redisroute.New(context.Background(), cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	counters := redisstore.NewSpampedeCounters(r)
	rs := spampede.DefaultRuleSet()
	now := time.Now()
	hot := struct{ lat, lng float64 }{1.30, 103.80}
	quiet := struct{ lat, lng float64 }{1.40, 103.95}

	run := func(b *testing.B, f *spampede.Filter, lat, lng float64, want ...spampede.Outcome) {
		lat0 := make([]time.Duration, 0, b.N)
		outcomes := map[spampede.Outcome]int{}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			d := f.Admit(context.Background(), "car", lat, lng, now)
			lat0 = append(lat0, time.Since(t0))
			outcomes[d.Outcome]++
		}
		b.StopTimer()
		slices.Sort(lat0)
		b.ReportMetric(float64(lat0[len(lat0)*99/100].Nanoseconds()), "p99-ns")
		b.ReportMetric(float64(lat0[len(lat0)-1].Nanoseconds()), "max-ns")
		for o := range outcomes {
			if !slices.Contains(want, o) {
				b.Errorf("outcome %s, want one of %v", o, want)
			}
		}
	}
	b.Run("open-cell", func(b *testing.B) {
		f, _ := spampede.New(spampede.DefaultConfig(), counters, rs, nil)
		run(b, f, quiet.lat, quiet.lng, spampede.Admitted)
	})
	b.Run("tripped-cell-cached", func(b *testing.B) {
		f, _ := spampede.New(spampede.DefaultConfig(), counters, rs, nil)
		for i := 0; i < rs.Rules[0].Threshold; i++ {
			f.RecordUnallocated(context.Background(), "car", hot.lat, hot.lng, now)
		}
		run(b, f, hot.lat, hot.lng, spampede.Rejected, spampede.RejectedCached)
	})
	b.Run("naive-get-per-booking", func(b *testing.B) {
		f, _ := spampede.New(spampede.DefaultConfig(), naiveStore{r}, rs, nil)
		run(b, f, quiet.lat, quiet.lng, spampede.Admitted)
	})
	b.Run("redis-paused-fail-open", func(b *testing.B) {
		f, _ := spampede.New(spampede.DefaultConfig(), counters, rs, nil)
		for _, n := range c.Nodes() {
			n.Pause()
		}
		defer func() {
			for _, n := range c.Nodes() {
				n.Resume()
			}
		}()
		run(b, f, quiet.lat, quiet.lng, spampede.FailOpen)
	})
}

// TestSpampedeFailsOpenWhenRedisHangs: with every node paused, admission
// answers fail_open (and never rejects).
func TestSpampedeFailsOpenWhenRedisHangs(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	f, err := spampede.New(spampede.DefaultConfig(), redisstore.NewSpampedeCounters(newRouterFor(t, c)), spampede.DefaultRuleSet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		n.Pause()
	}
	defer func() {
		for _, n := range c.Nodes() {
			n.Resume()
		}
	}()
	for i := 0; i < 50; i++ {
		if d := f.Admit(context.Background(), "car", 1.3, 103.8, time.Now()); d.Outcome != spampede.FailOpen {
			t.Fatalf("admission %d with Redis paused = %s, want fail_open", i, d.Outcome)
		}
	}
}
