package redisroute_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// BenchmarkPipeline20HMGET is the steady-state throughput of the 2019 call,
// pipelines of 20 HMGET read from replicas, for Apollo and for a plain
// go-redis v9 ClusterClient with ReadOnly, on the same cluster in the same run.
// Run: go test -run '^$' -bench Pipeline20HMGET -benchtime 5s ./internal/redisroute/
func BenchmarkPipeline20HMGET(b *testing.B) {
	c := clustertest.Start(b)
	keys := seed(b, c)
	readers := []struct {
		name string
		open func() (drill.Reader, func())
	}{
		{"apollo-replica-preferred", func() (drill.Reader, func()) {
			r := newRouter(b, c)
			return apolloReader(r), func() { r.Close() }
		}},
		{"apollo-primary", func() (drill.Reader, func()) {
			r := newRouter(b, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary })
			return apolloReader(r), func() { r.Close() }
		}},
		{"go-redis-v9-readonly", func() (drill.Reader, func()) {
			cc := newGoRedis(c)
			return goRedisReader(cc), func() { cc.Close() }
		}},
	}
	for _, rd := range readers {
		b.Run(rd.name, func(b *testing.B) {
			read, closeFn := rd.open()
			defer closeFn()
			b.SetParallelism(8) // 16 callers on 2 cores, as in the drills
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
				batch := make([]string, 20)
				for pb.Next() {
					for i := range batch {
						batch[i] = keys[rng.IntN(len(keys))]
					}
					if ok := read(context.Background(), batch); ok != len(batch) {
						b.Errorf("%d of %d commands succeeded", ok, len(batch))
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkFreshRead is what confirming a read costs: one HMGET from the
// primary (Fresh), the same confirmed by a replica (Fresh with Acks 1: a
// fence write and WAIT after it), and a plain go-redis v9 HMGET on the
// primary as the baseline, on the same cluster in the same run.
// Run: go test -run '^$' -bench FreshRead -benchtime 5s ./internal/redisroute/
func BenchmarkFreshRead(b *testing.B) {
	c := clustertest.Start(b)
	keys := seed(b, c)
	r := newRouter(b, c)
	defer r.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()[:1]}) // reads on primaries
	defer cc.Close()
	cases := []struct {
		name string
		read func(ctx context.Context, key string) error
	}{
		{"apollo-fresh", func(ctx context.Context, key string) error {
			return r.Exec(ctx, []redisroute.Cmd{{Args: []any{"HMGET", key, "lat", "lng"}, Key: key, Fresh: true}})[0].Err
		}},
		{"apollo-confirmed", func(ctx context.Context, key string) error {
			return r.Exec(ctx, []redisroute.Cmd{{Args: []any{"HMGET", key, "lat", "lng"}, Key: key, Fresh: true, Acks: 1}})[0].Err
		}},
		{"go-redis-v9-primary", func(ctx context.Context, key string) error {
			return cc.HMGet(ctx, key, "lat", "lng").Err()
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
				for pb.Next() {
					if err := tc.read(context.Background(), keys[rng.IntN(len(keys))]); err != nil {
						b.Error(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}
