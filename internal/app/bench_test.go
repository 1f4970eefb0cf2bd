package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/capacity"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// BenchmarkBatchGet20 measures the batch availability read of 20 drivers,
// through the store alone and through the HTTP API (JSON both ways, on
// loopback), against a real 3 × 2 cluster with replica-preferred reads.
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
	b.Run("store", func(b *testing.B) {
		b.SetParallelism(8)
		cpu := capacity.SelfCPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for pb.Next() {
				if _, err := a.Drivers().BatchGet(context.Background(), batch(rng)); err != nil {
					b.Error(err)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		b.ReportMetric((capacity.SelfCPU()-cpu)*1e6/float64(b.N), "cpu-µs/call")
	})
	b.Run("http", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		b.SetParallelism(8)
		cpu := capacity.SelfCPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for pb.Next() {
				body, _ := json.Marshal(map[string]any{"ids": batch(rng)})
				resp, err := client.Post(api+"/v1/drivers/batch-get", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		// The load generator (JSON, an HTTP client) runs in this process too.
		b.ReportMetric((capacity.SelfCPU()-cpu)*1e6/float64(b.N), "cpu-µs/call")
	})
}
