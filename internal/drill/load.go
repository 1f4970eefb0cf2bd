package drill

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Reader is one batch read: it reports how many of the keys were read
// successfully. It is what the drill measures.
type Reader func(ctx context.Context, keys []string) (ok int)

// Plan says how hard, how long, and when the fault strikes.
type Plan struct {
	Workers  int           // concurrent callers
	Pipeline int           // keys per call
	Duration time.Duration // whole run
	FaultAt  time.Duration // from the start
	// HealAt, if set, heals the fault during the run (to watch recovery);
	// otherwise it is healed after the run.
	HealAt time.Duration
	// CallTimeout bounds one call; a call still running then counts as failed.
	CallTimeout time.Duration
	Seed        uint64
}

// Validate reports a plan that cannot run.
func (p Plan) Validate() error {
	var errs []error
	if p.Workers < 1 || p.Workers > 1024 {
		errs = append(errs, fmt.Errorf("workers must be within [1, 1024], got %d", p.Workers))
	}
	if p.Pipeline < 1 || p.Pipeline > 1000 {
		errs = append(errs, fmt.Errorf("pipeline must be within [1, 1000], got %d", p.Pipeline))
	}
	if p.Duration < time.Second {
		errs = append(errs, fmt.Errorf("duration must be at least 1s, got %s", p.Duration))
	}
	if p.FaultAt < time.Second || p.FaultAt >= p.Duration {
		errs = append(errs, fmt.Errorf("fault-at must be at least 1s and before the end of the run, got %s of %s", p.FaultAt, p.Duration))
	}
	if p.HealAt != 0 && (p.HealAt <= p.FaultAt || p.HealAt >= p.Duration) {
		errs = append(errs, fmt.Errorf("heal-at must fall between the fault and the end of the run, got %s", p.HealAt))
	}
	if p.CallTimeout <= 0 {
		errs = append(errs, errors.New("call timeout must be positive"))
	}
	return errors.Join(errs...)
}

// sample is one call as a worker saw it.
type sample struct {
	at      time.Duration // when it ended, since the start of the run
	latency time.Duration
	ok      int
	of      int
}

// RunLoad drives reader with plan's load, injects fault at plan.FaultAt, and
// returns every call's outcome summarised. progress, if not nil, is called
// once per elapsed second with that second's figures. The fault is healed
// before Run returns.
func RunLoad(ctx context.Context, plan Plan, keys []string, read Reader, fault Fault, progress func(Second)) (Report, error) {
	if err := plan.Validate(); err != nil {
		return Report{}, err
	}
	if len(keys) < plan.Pipeline {
		return Report{}, fmt.Errorf("need at least %d keys, have %d", plan.Pipeline, len(keys))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	live := newLiveCounters(plan.Duration)
	samples := make([][]sample, plan.Workers)
	var wg sync.WaitGroup
	for w := 0; w < plan.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[w] = work(ctx, plan, keys, read, start, uint64(w)+plan.Seed, live)
		}()
	}
	faultErr, healErr := runFault(ctx, plan, fault, start, progress, live)
	wg.Wait()
	if fault != nil && plan.HealAt == 0 {
		hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		healErr = fault.Heal(hctx)
		hcancel()
	}
	rep := summarise(plan, fault, merge(samples))
	return rep, errors.Join(faultErr, healErr)
}

func work(ctx context.Context, plan Plan, keys []string, read Reader, start time.Time, seed uint64, live *liveCounters) []sample {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	batch := make([]string, plan.Pipeline)
	var out []sample
	for {
		at := time.Since(start)
		if at >= plan.Duration || ctx.Err() != nil {
			return out
		}
		for i := range batch {
			batch[i] = keys[rng.IntN(len(keys))]
		}
		cctx, cancel := context.WithTimeout(ctx, plan.CallTimeout)
		t0 := time.Now()
		ok := read(cctx, batch)
		lat := time.Since(t0)
		cancel()
		// A call counts in the second it ended: a second in which nothing
		// completes shows as a second with no successful call.
		out = append(out, sample{at: at + lat, latency: lat, ok: ok, of: len(batch)})
		live.add(at+lat, lat, ok == len(batch))
	}
}

// runFault waits until FaultAt, injects the fault, heals it at HealAt (if
// set, on its own goroutine: healing waits for the cluster), and reports
// progress every second until the run ends.
func runFault(ctx context.Context, plan Plan, fault Fault, start time.Time, progress func(Second), live *liveCounters) (err, healErr error) {
	injected := fault == nil
	healing := fault == nil || plan.HealAt == 0
	healed := make(chan error, 1)
	defer func() {
		if healing && fault != nil && plan.HealAt != 0 {
			healErr = <-healed
		}
	}()
	reported := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err(), nil
		case <-tick.C:
		}
		el := time.Since(start)
		if !injected && el >= plan.FaultAt {
			injected = true
			err = fault.Inject(ctx)
		}
		if injected && !healing && el >= plan.HealAt {
			healing = true
			go func() {
				hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
				defer cancel()
				healed <- fault.Heal(hctx)
			}()
		}
		for ; progress != nil && reported < int(el/time.Second); reported++ {
			progress(live.second(reported, plan))
		}
		if el >= plan.Duration {
			return err, nil
		}
	}
}
