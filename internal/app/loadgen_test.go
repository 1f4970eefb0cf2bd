package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/capacity"
)

// loadgenEnv, when set to a loadgenSpec in JSON, makes this test binary
// the HTTP load generator of BenchmarkBatchGet20 instead of running tests.
const loadgenEnv = "APOLLO_TEST_LOADGEN"

// loadgenSpec is what the load generator is to do: Calls batch reads of
// 20 random drivers of bench-0000 … bench-<IDs-1>, from Workers at once.
type loadgenSpec struct {
	URL     string
	Calls   int
	Workers int
	IDs     int
}

// loadgenResult is what it did: Seconds from its first call to its last
// answer, CPU its own CPU seconds over the same span.
type loadgenResult struct {
	Calls, Failed int
	FirstError    string
	Seconds, CPU  float64
}

// runLoadgen runs the load generator as a child process and returns its result.
func runLoadgen(b *testing.B, spec loadgenSpec) loadgenResult {
	b.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	name, args := loadgenCommand(b, os.Args[0], "-test.run=^$")
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), loadgenEnv+"="+string(js))
	// It must not outlive this process, however this one ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("load generator: %v: %s", err, stderr.String())
	}
	var res loadgenResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("load generator said %q: %v", out, err)
	}
	return res
}

// loadgenMain is the child's side: it reads the spec, runs it and
// prints the result as JSON; the exit code is non-zero only if it could
// not run at all (failed calls are counted, not fatal).
func loadgenMain(specJSON string) int {
	var spec loadgenSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil || spec.Calls < 0 || spec.Workers < 1 || spec.IDs < 1 {
		fmt.Fprintf(os.Stderr, "bad load generator spec %q: %v\n", specJSON, err)
		return 2
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: spec.Workers}, Timeout: 30 * time.Second}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	cpu, start := capacity.SelfCPU(), time.Now()
	var wg sync.WaitGroup
	for w := 0; w < spec.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(w)))
			ids := make([]string, 20)
			for next.Add(1) <= int64(spec.Calls) {
				for i := range ids {
					ids[i] = fmt.Sprintf("bench-%04d", rng.IntN(spec.IDs))
				}
				if err := postBatch(client, spec.URL, ids); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	res := loadgenResult{Calls: spec.Calls, Failed: int(failed.Load()), Seconds: time.Since(start).Seconds(), CPU: capacity.SelfCPU() - cpu}
	if e, ok := firstErr.Load().(string); ok {
		res.FirstError = e
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// postBatch is one POST /v1/drivers/batch-get, its answer read to the end.
func postBatch(client *http.Client, url string, ids []string) error {
	body, err := json.Marshal(map[string]any{"ids": ids})
	if err != nil {
		return err
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
