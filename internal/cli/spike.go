package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/spike"
)

const spikeSynopsis = `spike [--duration 120s] [--base-rate R] [--spike-multiplier 20] [--hotspot lat,lng]
      [--radius-m 800] [--modes off,shadow,on] [--instances N] [--outage | --crash]
      [--json F] [--html F] [--svg F]

Prove Spampede: a synthetic Singapore (drivers going on and off line, moving,
accepting or declining, driving trips; riders booking at a base rate) drives
Apollo's real booking pipeline and driver API, in process, on a fresh local
Redis Cluster per run. From --storm-start to --storm-end a rainstorm hits the
hotspot: riders there book at --spike-multiplier × the city's base rate, and
no driver starts inside it. The runs are the no-spike city with the Spampede
rule on (the baseline; twice: the second shows how much identical runs differ
on this machine), the no-spike city without the rule (what the filter itself
costs every booking), then each mode with the storm:
  off     no rule; every booking enters the pipeline
  shadow  the rule counts what it would reject, and admits
  on      the rule turns bookings away with 429 before any downstream call
The report compares riders outside the hotspot with the baseline of the same
round; with --rounds N it also pools each kind of run over the N rounds and
compares those riders with the pooled baselines.

Allocation does the work of a dispatch engine: each attempt holds one of
--alloc-slots for --alloc-cost (ETA and route calls), and workers retry every
admitted booking each second until --allocation-timeout. That shared capacity
is what a flood of bookings no driver can take exhausts.

--instances N runs N Apollo instances on the cluster, sharing the open
bookings through partition leases; riders' and drivers' calls go to them in
turn, as through a load balancer, and one dispatch engine serves them all.

--crash (with --instances 2 or more) instead runs Spampede on with the last
instance crashed at --crash-at (no hand-back, as SIGKILL, in process) and
restarted --crash-for later: it reports how soon the bookings the dead
instance held were claimed again, and whether any stayed open.

--outage instead runs Spampede on with every Redis node paused for
--outage-for from --outage-at: admission fails open, bookings fail with 503,
then recover.`

func runSpike(ctx context.Context, e env, args []string) error {
	cfg := spike.DefaultConfig()
	fs := newFlagSet(e, "spike", spikeSynopsis)
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each run")
	fs.DurationVar(&cfg.StormStart, "storm-start", cfg.StormStart, "when the storm starts")
	fs.DurationVar(&cfg.StormEnd, "storm-end", cfg.StormEnd, "when the storm ends")
	fs.Float64Var(&cfg.BaseRate, "base-rate", cfg.BaseRate, "bookings per second over the whole city")
	fs.Float64Var(&cfg.SpikeMultiplier, "spike-multiplier", cfg.SpikeMultiplier, "hotspot demand during the storm, in multiples of the base rate")
	hotspot := fs.String("hotspot", fmt.Sprintf("%.6f,%.6f", cfg.Hotspot.Lat, cfg.Hotspot.Lng), "centre of the storm as lat,lng (default: where four Spampede cells meet near Raffles Place)")
	fs.Float64Var(&cfg.RadiusM, "radius-m", cfg.RadiusM, "radius of the storm in metres")
	modes := fs.String("modes", strings.Join(cfg.Modes, ","), "Spampede modes to compare after the baseline: off, shadow, on")
	fs.BoolVar(&cfg.RepeatBaseline, "repeat-baseline", cfg.RepeatBaseline, "run the no-spike baseline twice, to show how much two identical runs differ on this machine")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "run everything this many times and also compare the rounds' riders pooled: a p99 of a few hundred riders moves with the machine's other work")
	fs.BoolVar(&cfg.NoFilterBaseline, "no-filter-baseline", cfg.NoFilterBaseline, "also run the no-spike city without the Spampede rule, to show what the filter costs every booking")
	fs.IntVar(&cfg.Instances, "instances", cfg.Instances, "Apollo instances sharing the work behind a round-robin load balancer")
	fs.BoolVar(&cfg.Crash, "crash", false, "run the instance-crash variant instead of the mode comparison (needs --instances 2 or more)")
	fs.DurationVar(&cfg.CrashAt, "crash-at", cfg.CrashAt, "when the last instance crashes (--crash)")
	fs.DurationVar(&cfg.CrashFor, "crash-for", cfg.CrashFor, "how long it stays down (--crash)")
	fs.BoolVar(&cfg.Outage, "outage", false, "run the Redis-outage variant instead of the mode comparison")
	fs.DurationVar(&cfg.OutageAt, "outage-at", cfg.OutageAt, "when every Redis node is paused (--outage)")
	fs.DurationVar(&cfg.OutageFor, "outage-for", cfg.OutageFor, "how long Redis stays paused (--outage)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the riders and the fleet: the same seed, the same city")
	fs.IntVar(&cfg.Drivers, "drivers", cfg.Drivers, "drivers in the fleet")
	fs.DurationVar(&cfg.AllocationTimeout, "allocation-timeout", cfg.AllocationTimeout, "a booking with no driver after this is unallocated (and counted by Spampede)")
	fs.DurationVar(&cfg.AllocCost, "alloc-cost", cfg.AllocCost, "dispatch-engine time per allocation attempt")
	fs.IntVar(&cfg.AllocSlots, "alloc-slots", cfg.AllocSlots, "allocation attempts the dispatch engine runs at once")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "booking workers retrying open bookings")
	fs.IntVar(&cfg.CountRejectedEvery, "count-rejected-every", cfg.CountRejectedEvery, "Spampede: count every n-th booking a tripped cell turns away as a miss (0: never)")
	fs.StringVar((*string)(&cfg.CountAt), "count-at", string(cfg.CountAt), "when Spampede counts a booking without a driver: first-miss or deadline")
	fs.IntVar(&cfg.Rule.Threshold, "threshold", cfg.Rule.Threshold, "Spampede: unallocated bookings in a cell's 3 × 3 block per bucket at which it trips")
	fs.IntVar(&cfg.Rule.BucketSeconds, "bucket-seconds", cfg.Rule.BucketSeconds, "Spampede: length of a time bucket")
	fs.IntVar(&cfg.Rule.HoldDownSeconds, "hold-down-seconds", cfg.Rule.HoldDownSeconds, "Spampede: a tripped cell stays tripped at least this long")
	fs.IntVar(&cfg.Cluster.Primaries, "primaries", cfg.Cluster.Primaries, "primaries of each local cluster")
	fs.IntVar(&cfg.Cluster.Replicas, "replicas", cfg.Cluster.Replicas, "replicas per primary")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	htmlOut := fs.String("html", "", "write a self-contained HTML report (timeline and cell map) to this file")
	svgOut := fs.String("svg", "", "write the timeline chart as SVG to this file")
	render := fs.String("render", "", "do not run: render --html/--svg from a --json file of an earlier run")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *render != "" {
		rep, err := readSpikeReport(*render)
		if err != nil {
			return err
		}
		return writeSpikeReports(rep, "", *htmlOut, *svgOut)
	}
	var err error
	if cfg.Hotspot, err = parseLatLng(*hotspot); err != nil {
		return usageError{err}
	}
	cfg.Modes = splitList(*modes)
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	say := func(format string, args ...any) { fmt.Fprintf(e.stdout, format+"\n", args...) }
	rep, err := spike.Drill(ctx, cfg, say)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	if err := spike.WriteTable(e.stdout, rep); err != nil {
		return err
	}
	return writeSpikeReports(rep, *jsonOut, *htmlOut, *svgOut)
}

func parseLatLng(s string) (driver.Location, error) {
	lat, lng, ok := strings.Cut(s, ",")
	if !ok {
		return driver.Location{}, fmt.Errorf("--hotspot %q must be lat,lng", s)
	}
	la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
	ln, err2 := strconv.ParseFloat(strings.TrimSpace(lng), 64)
	if err := errors.Join(err1, err2); err != nil {
		return driver.Location{}, fmt.Errorf("--hotspot %q must be two numbers, lat,lng", s)
	}
	return driver.Location{Lat: la, Lng: ln}, driver.ValidateLocation(la, ln)
}

func readSpikeReport(path string) (*spike.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep spike.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

func writeSpikeReports(rep *spike.Report, jsonPath, htmlPath, svgPath string) error {
	if jsonPath != "" {
		if err := writeJSONFile(jsonPath, rep); err != nil {
			return err
		}
	}
	return writeOutputs(
		output{htmlPath, func(w io.Writer) error { return spike.WriteHTML(w, rep) }},
		output{svgPath, func(w io.Writer) error { return spike.TimelineSVG(w, rep) }})
}
