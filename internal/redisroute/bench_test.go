package redisroute_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/apollo-platform/apollo/internal/capacity"
	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// BenchmarkPipeline20HMGET is the steady-state throughput of the 2019 call,
// pipelines of 20 HMGET, on the same cluster in the same run, for:
//   - Apollo, replica-preferred (one replica per shard: 3 nodes a call),
//     the same without merging the reads queued behind a busy pipeline
//     (CoalesceAfter 0; the default is 1), and on primaries;
//   - go-redis v9's ClusterClient on primaries (the plain client with
//     Apollo's fan-out) and with ReadOnly (replica reads, up to 6 nodes);
//   - rueidis on primaries and sending reads to replicas;
//   - raw pipelines: go-redis Clients, one per replica, each call's keys
//     grouped by the replica of their shard and sent at once, with no
//     cluster logic at all: what a pipeline per node costs here. It is not
//     the machine's limit: rueidis, which coalesces concurrent callers'
//     commands into one write per node, goes past it.
//
// Each row reports calls/s and the CPU time of this process per call (the
// load generator's share is the same in every row; Redis is other
// processes). Run: go test -run '^$' -bench Pipeline20HMGET -benchtime 5s ./internal/redisroute/
// (-rounds n for other than 3 rounds).
func BenchmarkPipeline20HMGET(b *testing.B) {
	c := clustertest.Start(b)
	keys := seed(b, c)
	// Each row's Apollo router keeps its metrics on the row's registry, so
	// that the row can say how many commands it hedged: on a shared
	// machine a pause of the process hedges the calls it catches, which
	// costs requests. The other clients have none.
	apollo := func(edit ...func(*redisroute.Config)) func(*prometheus.Registry) (drill.Reader, func()) {
		return func(reg *prometheus.Registry) (drill.Reader, func()) {
			r := newRouterOn(b, c, reg, edit...)
			return apolloReader(r), func() { r.Close() }
		}
	}
	readers := []struct {
		name string
		open func(*prometheus.Registry) (drill.Reader, func())
	}{
		{"apollo-replica-preferred", apollo()},
		{"apollo-replica-preferred-no-coalescing", apollo(func(cfg *redisroute.Config) { cfg.CoalesceAfter = 0 })},
		{"apollo-primary", apollo(func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary })},
		{"go-redis-v9-primary", func(*prometheus.Registry) (drill.Reader, func()) {
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()[:1]})
			return goRedisReader(cc), func() { cc.Close() }
		}},
		{"go-redis-v9-readonly", func(*prometheus.Registry) (drill.Reader, func()) {
			cc := newGoRedis(c)
			return goRedisReader(cc), func() { cc.Close() }
		}},
		{"rueidis-primary", func(*prometheus.Registry) (drill.Reader, func()) { return rueidisReader(b, c, false) }},
		{"rueidis-replicas", func(*prometheus.Registry) (drill.Reader, func()) { return rueidisReader(b, c, true) }},
		{"raw-pipelines", func(*prometheus.Registry) (drill.Reader, func()) { return rawReader(b, c) }},
	}
	// The rows take turns, a round at a time, so that the machine's drift
	// (other tenants of its cores come and go) falls on every row alike;
	// the figures are the medians over rounds, each ratio taken within a
	// round.
	got := map[string][]rowFigures{}
	for round := 1; round <= *benchRounds; round++ {
		for _, rd := range readers {
			var last *rowFigures // of the run with the final b.N; nil for a row -bench left out
			b.Run(fmt.Sprintf("round-%d/%s", round, rd.name), func(b *testing.B) {
				f := benchRow(b, keys, rd.open)
				last = &f
			})
			if last != nil {
				got[rd.name] = append(got[rd.name], *last)
			}
		}
	}
	summarize(b, got)
}

// benchRounds is how many times each row of BenchmarkPipeline20HMGET runs.
var benchRounds = flag.Int("rounds", 3, "rounds of BenchmarkPipeline20HMGET, each running every row once")

// rowFigures is what one run of a row measured.
type rowFigures struct{ calls, cpu float64 }

// benchRow runs one row: 16 callers reading 20 random keys a call.
func benchRow(b *testing.B, keys []string, open func(*prometheus.Registry) (drill.Reader, func())) rowFigures {
	reg := prometheus.NewRegistry()
	read, closeFn := open(reg)
	defer closeFn()
	b.SetParallelism(8) // 16 callers on 2 cores, as in the drills
	cpu := capacity.SelfCPU()
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
	f := rowFigures{calls: float64(b.N) / b.Elapsed().Seconds(), cpu: (capacity.SelfCPU() - cpu) * 1e6 / float64(b.N)}
	b.ReportMetric(f.calls, "calls/s")
	b.ReportMetric(f.cpu, "cpu-µs/call")
	if h, series := counter(b, reg, "apollo_redis_hedges_total", "sent"); series > 0 {
		b.ReportMetric(h/float64(b.N), "hedged-cmds/call")
	}
	return f
}

// summarize prints each row's medians over the rounds, and Apollo
// replica-preferred's ratio to go-redis on primaries and with ReadOnly,
// round by round and their median.
func summarize(b *testing.B, got map[string][]rowFigures) {
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		if n := len(xs); n%2 == 1 {
			return xs[n/2]
		} else if n > 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return 0
	}
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(got)) {
		var calls, cpu []float64
		for _, f := range got[name] {
			calls, cpu = append(calls, f.calls), append(cpu, f.cpu)
		}
		lines = append(lines, fmt.Sprintf("%-38s calls/s %v median %.0f, cpu-µs/call median %.1f", name, rounded(calls), median(calls), median(cpu)))
	}
	rp := got["apollo-replica-preferred"]
	for _, base := range []string{"go-redis-v9-primary", "go-redis-v9-readonly"} {
		var r []float64
		for i, f := range got[base] {
			if i < len(rp) {
				r = append(r, rp[i].calls/f.calls)
			}
		}
		if len(r) > 0 {
			each := make([]string, len(r))
			for i, x := range r {
				each[i] = fmt.Sprintf("%.2f", x)
			}
			lines = append(lines, fmt.Sprintf("apollo-replica-preferred / %s: %s, median %.2f", base, strings.Join(each, " "), median(r)))
		}
	}
	// Printed, not logged: a benchmark's log shows only with -v.
	fmt.Println("summary over rounds:\n  " + strings.Join(lines, "\n  "))
}

func rounded(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(math.Round(x))
	}
	return out
}

// rueidisReader is rueidis's cluster client, reading from primaries or,
// with replicas, sending every read-only command to a replica.
func rueidisReader(b *testing.B, c *localcluster.Cluster, replicas bool) (drill.Reader, func()) {
	opt := rueidis.ClientOption{InitAddress: c.Addrs()[:1], Username: c.Config().User, Password: c.Config().Password,
		DisableCache: true}
	if replicas {
		opt.SendToReplicas = func(cmd rueidis.Completed) bool { return cmd.IsReadOnly() }
	}
	cl, err := rueidis.NewClient(opt)
	if err != nil {
		b.Fatalf("rueidis: %v", err)
	}
	return func(ctx context.Context, keys []string) int {
		cmds := make(rueidis.Commands, len(keys))
		for i, k := range keys {
			cmds[i] = cl.B().Hmget().Key(k).Field("status", "lat", "lng").Build()
		}
		ok := 0
		for _, res := range cl.DoMulti(ctx, cmds...) {
			if res.Error() == nil {
				ok++
			}
		}
		return ok
	}, cl.Close
}

// rawReader sends each call's HMGETs straight to the first replica of
// their shard, one pipeline per node, all at once: the cost of the wire
// and of Redis with no routing, hedging or bookkeeping on top.
func rawReader(b *testing.B, c *localcluster.Cluster) (drill.Reader, func()) {
	ctx := context.Background()
	cc := newGoRedis(c)
	defer cc.Close()
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	clients := map[string]*redis.Client{}
	var nodeOf [16384]*redis.Client
	for _, s := range slots {
		addr := s.Nodes[len(s.Nodes)-1].Addr // a replica
		if clients[addr] == nil {
			clients[addr] = redis.NewClient(&redis.Options{Addr: addr, Username: c.Config().User, Password: c.Config().Password,
				OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
		}
		for slot := s.Start; slot <= s.End; slot++ {
			nodeOf[slot] = clients[addr]
		}
	}
	return func(ctx context.Context, keys []string) int {
			groups := map[*redis.Client][]string{}
			for _, k := range keys {
				n := nodeOf[redisroute.Slot(k)]
				groups[n] = append(groups[n], k)
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			ok := 0
			for n, ks := range groups {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmds, _ := n.Pipelined(ctx, func(p redis.Pipeliner) error {
						for _, k := range ks {
							p.HMGet(ctx, k, "status", "lat", "lng")
						}
						return nil
					})
					good := 0
					for _, cmd := range cmds {
						if cmd.Err() == nil {
							good++
						}
					}
					mu.Lock()
					ok += good
					mu.Unlock()
				}()
			}
			wg.Wait()
			return ok
		}, func() {
			for _, cl := range clients {
				cl.Close()
			}
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
		b.Run(tc.name, func(b *testing.B) { onRandomKeys(b, keys, "reads/s", tc.read) })
	}
}

// BenchmarkAckedWrite is what a write acknowledged by a replica costs: an
// Apollo SET with Acks 1 (WAIT 1, then the proof that every replica holds
// it or cannot take over without it: two INFO replication on the primary,
// and a round trip to a replica the primary has not heard acknowledge yet;
// proof.go), against a go-redis v9 pipeline of the same SET and WAIT 1 on
// the primary, which is what Apollo sent before the proof, on the same
// cluster in the same run.
// Run: go test -run '^$' -bench AckedWrite -benchtime 5s ./internal/redisroute/
func BenchmarkAckedWrite(b *testing.B) {
	c := clustertest.Start(b)
	keys := seed(b, c)
	r := newRouter(b, c)
	defer r.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()[:1]})
	defer cc.Close()
	cases := []struct {
		name  string
		write func(ctx context.Context, key string) error
	}{
		{"apollo-acked", func(ctx context.Context, key string) error {
			w := redisroute.Write("SET", key+":w", "1")
			w.Acks = 1
			return r.Exec(ctx, []redisroute.Cmd{w})[0].Err
		}},
		{"go-redis-v9-wait", func(ctx context.Context, key string) error {
			// The SET and its WAIT on one connection of the key's primary:
			// WAIT covers the writes sent before it on its connection.
			n, err := cc.MasterForKey(ctx, key+":w")
			if err != nil {
				return err
			}
			var wait *redis.Cmd
			if _, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key+":w", "1", 0)
				wait = p.Do(ctx, "wait", 1, 250)
				return nil
			}); err != nil {
				return err
			}
			if acked, _ := wait.Int64(); acked < 1 {
				return fmt.Errorf("WAIT 1: %d replicas acknowledged", acked)
			}
			return nil
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) { onRandomKeys(b, keys, "writes/s", tc.write) })
	}
}

// onRandomKeys runs op on random keys from 8 goroutines per CPU until the
// benchmark has its count, and reports the rate in unit.
func onRandomKeys(b *testing.B, keys []string, unit string, op func(ctx context.Context, key string) error) {
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			if err := op(context.Background(), keys[rng.IntN(len(keys))]); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}
