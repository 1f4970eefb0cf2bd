package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/apollo-platform/apollo/internal/capacity"
)

const capacitySynopsis = `capacity [--measure ops,fleet] [--count 2000] [--callers 16]
      [--instances 1,2,4] [--bookings 300] [--create-over 5s]
      [--allocation-timeout 20s] [--partitions 64] [--json F]

Measure what Apollo asks of Redis, on fresh local clusters.

ops: one instance, built but not serving (so no background work runs), does
each operation --count times with --callers at once: a driver heartbeat, a
driver going online, a batch read of 20 drivers, an admission decision, a
booking created and allocated, a driver's accept, a booking created that
finds no driver. Per operation it prints the commands the router sent (a
script is one), the commands Redis executed (INFO total_commands_processed:
a script's own calls too), the router's round trips (requests to nodes),
and the CPU the Redis processes spent (INFO cpu, every node, replicas
included), hence how many such operations one Redis core sustains a second.

fleet: how a fleet shares the background booking work. For each instance
count: a fresh local Redis Cluster, that many Apollo instances in this
process, and --bookings bookings created over --create-over, spread over the
instances, in a city with no driver, so every booking searches until its
deadline on its retry schedule. It prints, per instance count, allocation
attempts per booking and Redis commands per open booking per second (both
must stay flat as instances are added), and how the open-index commands
spread over the shards (MONITOR on every primary: the busiest shard's count
over the mean).`

func runCapacity(ctx context.Context, e env, args []string) error {
	cfg := capacity.DefaultFleetConfig()
	ocfg := capacity.DefaultOpsConfig()
	fs := newFlagSet(e, "capacity", capacitySynopsis)
	measures := fs.String("measure", "ops,fleet", "what to measure: ops, fleet, or both")
	fs.IntVar(&ocfg.Count, "count", ocfg.Count, "ops: how many of each operation")
	fs.IntVar(&ocfg.Callers, "callers", ocfg.Callers, "ops: callers at once")
	instances := fs.String("instances", "1,2,4", "instance counts to measure, comma-separated")
	fs.IntVar(&cfg.Bookings, "bookings", cfg.Bookings, "bookings created per instance count")
	fs.DurationVar(&cfg.CreateOver, "create-over", cfg.CreateOver, "how long the creates are spread over")
	fs.DurationVar(&cfg.AllocationTimeout, "allocation-timeout", cfg.AllocationTimeout, "each booking's search deadline")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "open-index partitions")
	fs.IntVar(&cfg.Cluster.Primaries, "primaries", cfg.Cluster.Primaries, "primaries of each local cluster")
	fs.IntVar(&cfg.Cluster.Replicas, "replicas", cfg.Cluster.Replicas, "replicas per primary")
	jsonOut := fs.String("json", "", "write the rows as JSON to this file")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	cfg.Instances = nil
	for _, s := range splitList(*instances) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return usageError{fmt.Errorf("--instances %q: %q is not a number", *instances, s)}
		}
		cfg.Instances = append(cfg.Instances, n)
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	ocfg.Cluster = cfg.Cluster
	var out struct {
		Ops   []capacity.OpRow    `json:"ops,omitempty"`
		Fleet []capacity.FleetRow `json:"fleet,omitempty"`
	}
	say := func(format string, args ...any) { fmt.Fprintf(e.stdout, format+"\n", args...) }
	for _, m := range splitList(*measures) {
		var err error
		switch m {
		case "ops":
			if out.Ops, err = capacity.Ops(ctx, ocfg, say); err == nil {
				fmt.Fprintln(e.stdout)
				writeOpsTable(e, out.Ops)
			}
		case "fleet":
			if out.Fleet, err = capacity.Fleet(ctx, cfg, say); err == nil {
				fmt.Fprintln(e.stdout)
				writeFleetTable(e, out.Fleet)
			}
		default:
			return usageError{fmt.Errorf("--measure %q: want ops or fleet", m)}
		}
		if err != nil {
			return err
		}
	}
	if *jsonOut != "" {
		return writeJSONFile(*jsonOut, out)
	}
	return nil
}

func writeOpsTable(e env, rows []capacity.OpRow) {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcommands sent\texecuted\tround trips\tRedis CPU µs\ta Redis core sustains /s\tApollo CPU µs\tthis machine did /s\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.0f\t\n", r.Op, r.Sent, r.Executed, r.RoundTrips, r.RedisCPUMicros, r.PerCore, r.ApolloCPUMicros, r.PerSecond)
	}
	tw.Flush()
	fmt.Fprintln(e.stdout)
}

func writeFleetTable(e env, rows []capacity.FleetRow) {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "instances\tbookings\tattempts/booking\tvs 1\tcommands/booking/s\tvs 1\tindex commands by shard\tbusiest/mean\tstill open\t")
	for _, r := range rows {
		by := make([]string, len(r.IndexByShard))
		for i, x := range r.IndexByShard {
			by[i] = strconv.FormatInt(x, 10)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.2f×\t%.2f\t%.2f×\t%s\t%.2f\t%d\t\n", r.Instances, r.Bookings, r.AttemptsPerBooking,
			r.AttemptsPerBooking/rows[0].AttemptsPerBooking, r.CommandsPerBookingSecond, r.CommandsPerBookingSecond/rows[0].CommandsPerBookingSecond,
			strings.Join(by, " / "), r.BusiestShare, r.StillOpen)
	}
	tw.Flush()
}
