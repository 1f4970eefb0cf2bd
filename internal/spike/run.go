package spike

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/sim"
)

// Progress hears what the drill is doing, for a terminal.
type Progress func(format string, args ...any)

// plan is one run of the drill.
type plan struct {
	name, mode string
	round      int // from 1
	storm      bool
	outage     bool
	crash      bool
}

// runOne starts a fresh cluster and the service, drives the city through
// it, and tallies what became of every rider.
func runOne(ctx context.Context, cfg Config, p plan, say Progress) (Run, samples, error) {
	arrivals, err := sim.Arrivals(cfg.demand(p.storm))
	if err != nil {
		return Run{}, samples{}, err
	}
	say("%s: starting a %d × %d cluster", p.name, cfg.Cluster.Primaries, cfg.Cluster.Replicas)
	c, err := localcluster.Start(ctx, cfg.Cluster)
	if err != nil {
		return Run{}, samples{}, err
	}
	defer c.Close()
	svc, err := startInstances(ctx, cfg, c, p.mode)
	if err != nil {
		return Run{}, samples{}, err
	}
	defer svc.stop()
	d, err := newDriving(cfg, svc, arrivals)
	if err != nil {
		return Run{}, samples{}, err
	}
	say("%s: bringing %d drivers on line", p.name, cfg.Drivers)
	if err := d.fleet.Seed(ctx, time.Now, nil); err != nil {
		return Run{}, samples{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(2)
	go func() { defer wg.Done(); d.fleet.Run(runCtx, time.Now, nil) }()
	redis := newSampler(c.Nodes())
	go func() { defer wg.Done(); redis.run(runCtx) }()
	if p.outage {
		wg.Add(1)
		go func() { defer wg.Done(); pauseAll(runCtx, c, start, cfg.OutageAt, cfg.OutageFor, say) }()
	}
	var crash *CrashResult
	var crashErr error
	if p.crash {
		wg.Add(1)
		go func() {
			defer wg.Done()
			crash, crashErr = crashOne(runCtx, cfg, svc, c, start)
			if crash != nil {
				say("instance-crash: instance %d crashed at %.0fs holding %d partitions and %d open bookings (%d due by its leases' end); %d worked again, those due at most %.1fs after the crash; %d late",
					cfg.Instances, crash.AtS, crash.Partitions, crash.Open, crash.DueByLease, crash.Reclaimed, crash.MaxAfterS, crash.Late)
			}
		}()
	}
	say("%s: %d riders over %s (Spampede %s)", p.name, len(arrivals), cfg.Duration, p.mode)
	err = d.ride(runCtx, start, say)
	if err == nil {
		say("%s: waiting %s for the last bookings to be allocated or given up", p.name, cfg.AllocationTimeout+3*time.Second)
		err = sleep(runCtx, cfg.AllocationTimeout+3*time.Second)
	}
	if err == nil {
		d.settle(runCtx, func(format string, a ...any) { say("%s: "+format, append([]any{p.name}, a...)...) })
	}
	cancel()
	wg.Wait()
	if err != nil {
		return Run{}, samples{}, err
	}
	if crashErr != nil && !errors.Is(crashErr, context.Canceled) {
		return Run{}, samples{}, crashErr
	}
	run, smp := d.result(cfg, p, start, redis)
	if crash != nil {
		crash.Overdue = d.overdue()
		run.Crash = crash
	}
	return run, smp, nil
}

// pauseAll hangs every Redis node for d from at, then resumes them.
func pauseAll(ctx context.Context, c *localcluster.Cluster, start time.Time, at, d time.Duration, say Progress) {
	if sleep(ctx, time.Until(start.Add(at))) != nil {
		return
	}
	say("outage: pausing every Redis node for %s", d)
	for _, n := range c.Nodes() {
		n.Pause()
	}
	defer func() {
		for _, n := range c.Nodes() {
			n.Resume()
		}
		say("outage: Redis resumed")
	}()
	sleep(ctx, d)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Drill runs the drill: the no-spike baseline and each mode, or the outage
// variant, each on a fresh cluster.
func Drill(ctx context.Context, cfg Config, say Progress) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if say == nil {
		say = func(string, ...any) {}
	}
	plans := cfg.plans()
	rep := &Report{Settings: cfg.settings(), Hotspot: Hotspot{Lat: cfg.Hotspot.Lat, Lng: cfg.Hotspot.Lng, RadiusM: cfg.RadiusM,
		Cells: hotspotCells(cfg.Hotspot, cfg.RadiusM, cfg.Rule.CellBits)}}
	var smps []samples
	for _, p := range plans {
		r, smp, err := runOne(ctx, cfg, p, say)
		if err != nil {
			return rep, fmt.Errorf("%s run: %w", p.name, err)
		}
		rep.Runs, smps = append(rep.Runs, r), append(smps, smp)
		say("%s: outside the hotspot %.1f%% got a driver, booking p99 %.1f ms; inside %d requested, %d rejected",
			p.name, 100*r.Outside.Success(), r.Outside.LatencyP99, r.Inside.Requested, r.Inside.Rejected)
	}
	rep.Summary = summarize(rep.Runs, smps)
	return rep, nil
}

// plans are the runs of the drill, in order. The no-spike baseline runs
// the rule that shadow and on run: with nothing tripped, the filter still
// reads its counters for every booking, and that cost is the filter's, not
// the storm's. The baseline without the rule shows what it is. Runs of a
// later round are named with " #<round>".
func (c Config) plans() []plan {
	if c.Outage {
		return []plan{{name: "outage", mode: ModeOn, round: 1, storm: true, outage: true}}
	}
	if c.Crash {
		return []plan{{name: "instance-crash", mode: ModeOn, round: 1, storm: true, crash: true}}
	}
	var plans []plan
	for round := 1; round <= c.Rounds; round++ {
		add := func(name, mode string, storm bool) {
			plans = append(plans, plan{name: roundName(name, round), mode: mode, round: round, storm: storm})
		}
		add(baselineName, ModeOn, false)
		if c.RepeatBaseline {
			add("baseline-repeat", ModeOn, false)
		}
		if c.NoFilterBaseline {
			add("baseline-no-filter", ModeOff, false)
		}
		for _, m := range c.Modes {
			add(m, m, true)
		}
	}
	return plans
}

func (c Config) settings() Settings {
	s := Settings{Seed: c.Seed, Rounds: c.Rounds, Duration: c.Duration, StormStart: c.StormStart, StormEnd: c.StormEnd, BaseRate: c.BaseRate,
		SpikeMultiplier: c.SpikeMultiplier, Drivers: c.Drivers, AllocationTimeout: c.AllocationTimeout, AllocCost: c.AllocCost,
		AllocSlots: c.AllocSlots, Workers: c.Workers, CountAt: string(c.CountAt), CountRejectedEvery: c.CountRejectedEvery, CellBits: c.Rule.CellBits, BucketSeconds: c.Rule.BucketSeconds,
		Threshold: c.Rule.Threshold, HoldDownSeconds: c.Rule.HoldDownSeconds, Primaries: c.Cluster.Primaries, Replicas: c.Cluster.Replicas, Instances: c.Instances}
	if c.Outage {
		s.Outage = &Window{From: c.OutageAt.Seconds(), To: (c.OutageAt + c.OutageFor).Seconds()}
	}
	if c.Crash {
		s.Crash = &Window{From: c.CrashAt.Seconds(), To: (c.CrashAt + c.CrashFor).Seconds()}
	}
	return s
}
