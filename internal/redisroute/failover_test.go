package redisroute_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

type writeOutcome struct {
	key, val string
	at       time.Duration
	err      error
}

// writeLoad writes unique values with one replica acknowledgement until ctx ends.
func writeLoad(ctx context.Context, r *redisroute.Router, workers int, start time.Time) []writeOutcome {
	var mu sync.Mutex
	var out []writeOutcome
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				key, val := fmt.Sprintf("fo:%d:%d", w, i), fmt.Sprint(i)
				cmd := redisroute.Write("SET", key, val)
				cmd.Acks = 1
				res := r.Do(context.WithoutCancel(ctx), cmd)
				mu.Lock()
				out = append(out, writeOutcome{key, val, time.Since(start), res.Err})
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return out
}

// TestPrimaryCrashFailsOver kills a primary under read and write load.
// Reads keep succeeding; writes fail only after the crash, succeed again
// once a replica is promoted, and every write reported done is stored.
//
// Between the moment the cluster flags the primary as failed and the
// promotion, Redis answers CLUSTERDOWN for every slot unless
// cluster-allow-reads-when-down is on, which is what a read-heavy service
// like Apollo should run with (apollo check recommends it).
func TestPrimaryCrashFailsOver(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.NodeTimeout = 2 * time.Second
		cfg.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
	})
	keys := seed(t, c)
	r := newRouter(t, c)
	primary := c.Primary(ctxFor(t, 5*time.Second), 1)
	fault := drill.FaultFunc{Label: "kill primary " + primary.Addr,
		InjectFn: func(context.Context) error { return primary.Kill() },
		HealFn: func(ctx context.Context) error {
			if err := primary.Restart(ctx); err != nil {
				return err
			}
			return c.WaitHealthy(ctx)
		}}
	plan := drill.Plan{Workers: 8, Pipeline: 20, Duration: 12 * time.Second, FaultAt: 2 * time.Second, CallTimeout: 5 * time.Second}

	start := time.Now()
	wctx, stopWrites := context.WithTimeout(context.Background(), plan.Duration)
	defer stopWrites()
	writesDone := make(chan []writeOutcome)
	go func() { writesDone <- writeLoad(wctx, r, 4, start) }()
	rep, err := drill.RunLoad(context.Background(), plan, keys, apolloReader(r), fault, nil)
	writes := <-writesDone
	if err != nil {
		t.Fatal(err)
	}
	if rep.OKCommands != rep.Commands {
		t.Errorf("reads: %d of %d commands succeeded during the failover, want all", rep.OKCommands, rep.Commands)
	}

	var ok, failed, ambiguous, unconfirmed int
	var firstFail, lastFail time.Duration
	for _, w := range writes {
		switch {
		case w.err == nil:
			ok++
			continue
		case errors.Is(w.err, redisroute.ErrAmbiguous):
			ambiguous++
		case errors.Is(w.err, redisroute.ErrUnconfirmed):
			unconfirmed++
		default:
			failed++
		}
		if firstFail == 0 {
			firstFail = w.at
		}
		lastFail = max(lastFail, w.at)
		if w.at < plan.FaultAt {
			t.Errorf("write %s failed before the fault, at %s: %v", w.key, w.at, w.err)
		}
	}
	t.Logf("reads: %d calls, %.3f%% ok, max %.1f ms; writes: %d ok, %d failed, %d ambiguous, %d unconfirmed, failures between %s and %s",
		rep.Calls, 100*rep.CallSuccessRatio, rep.MaxMs, ok, failed, ambiguous, unconfirmed, firstFail.Round(time.Millisecond), lastFail.Round(time.Millisecond))
	if lastFail > plan.Duration-2*time.Second {
		t.Errorf("writes still failing %s after the start (fault at %s): failover never completed", lastFail, plan.FaultAt)
	}

	// Every write reported done is stored, on whichever node is primary now.
	reader := newRouter(t, c, func(cfg *redisroute.Config) { cfg.Policy = redisroute.Primary })
	var gets []redisroute.Cmd
	var want []string
	for _, w := range writes {
		if w.err == nil {
			gets = append(gets, redisroute.Read("GET", w.key))
			want = append(want, w.val)
		}
	}
	res := reader.Exec(ctxFor(t, 10*time.Second), gets)
	for i, g := range res {
		if g.Err != nil || g.Val != want[i] {
			t.Errorf("write %v reported done, now reads %v, %v", gets[i].Args, g.Val, g.Err)
		}
	}
}
