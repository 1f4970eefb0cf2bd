package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/capacity"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// BenchmarkBatchGet20 measures the batch availability read of 20 drivers,
// through the store alone and through the HTTP API (JSON both ways, on
// loopback, from a load generator in another process), against a real
// 3 × 2 cluster with replica-preferred reads. cpu-µs/call is this
// process's: the store row's callers are goroutines of it, the HTTP row's
// load generator reports its own CPU apart. The load generator is wrk when
// it is installed (http-wrk) and Go's net/http client always (http-go);
// with wrk, the interleaved row takes the store and http-wrk rows in
// turns within one run, so that a slow spell of the machine falls on both;
// the http-floor rows answer the same requests with a canned answer, at
// full speed and after spending the store row's CPU a call.
// Run: go test -run '^$' -bench BatchGet20 -benchtime 5s ./internal/app/
func BenchmarkBatchGet20(b *testing.B) {
	c := clustertest.Start(b)
	a, api, _ := startAppB(b, c.Addrs()[:1])
	ids := make([]string, 2000)
	now := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%04d", i)
		if _, err := a.Drivers().Heartbeat(context.Background(), ids[i], driver.Location{Lat: 1.3, Lng: 103.8}, now); err != nil {
			b.Fatal(err)
		}
	}
	batch := func(rng *rand.Rand) []string {
		out := make([]string, 20)
		for i := range out {
			out[i] = ids[rng.IntN(len(ids))]
		}
		return out
	}
	// The store row's callers and the HTTP rows' connections are as many,
	// whatever GOMAXPROCS (1 under `make bench-http`).
	const callers = 16
	checkLoadgenApart(b)
	// The store row's Apollo CPU a call, in nanoseconds, for the
	// http-floor-busy row; read by its server's handlers.
	var storeCPU atomic.Int64
	busyFor := func() time.Duration { return time.Duration(storeCPU.Load()) }
	b.Run("store", func(b *testing.B) {
		b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
		cpu, redisCPU := capacity.SelfCPU(), clusterCPU(b, c)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for pb.Next() {
				if _, err := a.Drivers().BatchGet(context.Background(), batch(rng)); err != nil {
					b.Error(err)
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		perCall := (capacity.SelfCPU() - cpu) / float64(b.N)
		storeCPU.Store(int64(perCall * float64(time.Second)))
		b.ReportMetric(perCall*1e6, "cpu-µs/call")
		b.ReportMetric((clusterCPU(b, c)-redisCPU)*1e6/float64(b.N), "redis-cpu-µs/call")
	})
	// The load generator is another process, so that this process's CPU
	// is the server's alone: the HTTP API, the store and the router. The
	// two share the machine's cores, as a client on the same host would.
	// With busy, the row's server spends busy() of CPU a call before
	// answering, and net-http-µs/call is its CPU a call less that.
	httpRow := func(busy func() time.Duration, run func(*testing.B, loadgenSpec) loadgenResult) func(*testing.B) {
		return func(b *testing.B) {
			cpu, redisCPU := capacity.SelfCPU(), clusterCPU(b, c)
			b.ResetTimer()
			got := run(b, loadgenSpec{URL: api + "/v1/drivers/batch-get", Calls: b.N, Workers: callers, IDs: len(ids)})
			b.StopTimer()
			server := capacity.SelfCPU() - cpu
			b.ReportMetric((clusterCPU(b, c)-redisCPU)*1e6/float64(got.Calls), "redis-cpu-µs/call")
			if got.Failed > 0 {
				b.Errorf("%d of %d calls failed: %s", got.Failed, got.Calls, got.FirstError)
			}
			// ns/op from the calls made: wrk runs for a time, whatever b.N.
			b.ReportMetric(got.Seconds*1e9/float64(got.Calls), "ns/op")
			b.ReportMetric(float64(got.Calls)/got.Seconds, "calls/s")
			b.ReportMetric(server*1e6/float64(got.Calls), "cpu-µs/call")
			b.ReportMetric(got.CPU*1e6/float64(got.Calls), "loadgen-cpu-µs/call")
			if busy != nil {
				b.ReportMetric(float64(busy().Microseconds()), "busy-µs/call")
				b.ReportMetric(server*1e6/float64(got.Calls)-float64(busy().Microseconds()), "net-http-µs/call")
			}
		}
	}
	if wrk, err := exec.LookPath("wrk"); err == nil {
		b.Run("http-wrk", httpRow(nil, func(b *testing.B, spec loadgenSpec) loadgenResult { return runWrk(b, wrk, wrkDuration(), spec) }))
		// The store and http-wrk rows again, in turns (the store for a
		// slice, then HTTP for one, five times), so that a spell when the
		// machine runs slow falls on both alike: run one after the other,
		// the two rows of one round moved apart by as much as a fifth on
		// shared cores, more than the HTTP layer's own cost moves.
		b.Run("interleaved", func(b *testing.B) {
			const turns = 5
			slice := max(time.Second, (wrkDuration() / turns).Round(time.Second))
			var storeCalls, httpCalls int
			var storeSecs, httpSecs float64
			var ratios []float64
			for range turns {
				n, secs := storeFor(b, a.Drivers().BatchGet, batch, callers, slice)
				got := runWrk(b, wrk, slice, loadgenSpec{URL: api + "/v1/drivers/batch-get", Workers: callers, IDs: len(ids)})
				if got.Failed > 0 {
					b.Errorf("%d of %d calls failed: %s", got.Failed, got.Calls, got.FirstError)
				}
				storeCalls, storeSecs, httpCalls, httpSecs = storeCalls+n, storeSecs+secs, httpCalls+got.Calls, httpSecs+got.Seconds
				ratios = append(ratios, (float64(got.Calls)/got.Seconds)/(float64(n)/secs))
			}
			slices.Sort(ratios)
			// ns/op of the HTTP turns' calls: the row runs for a time, whatever b.N.
			b.ReportMetric(httpSecs*1e9/float64(httpCalls), "ns/op")
			b.ReportMetric(float64(storeCalls)/storeSecs, "store-calls/s")
			b.ReportMetric(float64(httpCalls)/httpSecs, "http-calls/s")
			b.ReportMetric((float64(httpCalls)/httpSecs)/(float64(storeCalls)/storeSecs), "http/store")
			b.ReportMetric(ratios[len(ratios)/2], "median-turn-http/store")
		})
		// The floor of any net/http API on this machine: the same requests
		// and a real answer of the same size, with no work in between.
		floor := cannedServer(b, api+"/v1/drivers/batch-get", batch(rand.New(rand.NewPCG(1, 1))), nil)
		b.Run("http-floor", httpRow(nil, func(b *testing.B, spec loadgenSpec) loadgenResult {
			spec.URL = floor
			return runWrk(b, wrk, wrkDuration(), spec)
		}))
		// The floor again at a few thousand calls a second: every answer
		// first keeps the CPU busy for as long as a store call took
		// Apollo's process in the store row (Redis's share, on the same
		// CPUs in the HTTP row, is left out, so it runs somewhat faster
		// than the HTTP row). net/http costs more a request at a few
		// thousand a second than at the floor row's tens of thousands, so
		// this row's CPU a call less the busy time (net-http-µs/call) is
		// near what the HTTP row pays that no handler can remove.
		busy := cannedServer(b, api+"/v1/drivers/batch-get", batch(rand.New(rand.NewPCG(1, 1))), busyFor)
		b.Run("http-floor-busy", func(b *testing.B) {
			if busyFor() == 0 {
				b.Skip("needs the store row's CPU a call: run the store row too")
			}
			httpRow(busyFor, func(b *testing.B, spec loadgenSpec) loadgenResult {
				spec.URL = busy
				return runWrk(b, wrk, wrkDuration(), spec)
			})(b)
		})
	}
	// Go's client, this test binary run as a child (see TestMain).
	b.Run("http-go", httpRow(nil, runLoadgen))
}

// storeFor calls get with batches from callers goroutines for d, and
// returns the calls made and the seconds they took; a failed call fails
// the benchmark, as in the store row.
func storeFor(b *testing.B, get func(context.Context, []string) (redisstore.Batch, error), batch func(*rand.Rand) []string, callers int, d time.Duration) (int, float64) {
	var calls atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for time.Now().Before(deadline) {
				if _, err := get(context.Background(), batch(rng)); err != nil {
					b.Error(err)
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	return int(calls.Load()), time.Since(start).Seconds()
}

// clusterCPU is the CPU the cluster's redis-server processes have used so
// far, in seconds: with this process's and the load generator's, what a
// call costs the whole machine.
func clusterCPU(b *testing.B, c *localcluster.Cluster) float64 {
	s, err := c.CPUSeconds(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// cannedServer serves, on a plain net/http server, the answer the API gave
// to one batch read of ids, to every request, after reading its body: the
// cost of HTTP alone, for the http-floor rows. With busy, each request
// first keeps the CPU busy for busy().
func cannedServer(b *testing.B, url string, ids []string, busy func() time.Duration) string {
	body, err := json.Marshal(map[string][]string{"ids": ids})
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("batch-get: %d %s %v", resp.StatusCode, answer, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if busy != nil {
			for start, d := time.Now(), busy(); time.Since(start) < d; {
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}
