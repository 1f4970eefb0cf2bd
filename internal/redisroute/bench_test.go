package redisroute_test

import (
	"context"
	"math/rand/v2"
	"testing"

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
