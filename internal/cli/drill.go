package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/drill"
)

const drillSynopsis = `drill --scenario S [--configs legacy-2019,go-redis-v9,apollo] [--duration 60s]

Reproduce a failure on a local Redis Cluster and compare, side by side, the
2019 client setup (legacy-2019), today's go-redis v9 ClusterClient with ReadOnly
(go-redis-v9) and Apollo's router (apollo). Each configuration runs on a fresh
3 × 2 cluster seeded with drivers through the real driver store, under the
batch availability read (the call of the 2019 incident).

Scenarios: replica-crash, replica-hang, replica-busy (a script that never
ends runs on the replica: it answers BUSY to every command), replica-resync
(the replica crashes during more writes than its primary's backlog holds and
restarts at once: it answers reads with its old data, none of the drivers,
until a full sync 5 s later; a missing driver counts as a failed command),
primary-crash, slow-replica, reshard, full-outage, replica-cutoff (the path
between the drill's clients and the replica is cut by iptables, every packet
dropped both ways, while the cluster sees nothing wrong and keeps offering
it: needs iptables and root), replica-lossy (the same path loses 5 % of its
packets, each on its own chance, both ways, as a failing card or switch port
does: nothing fails outright, TCP sends again what was lost, a request's or
its answer's packet about 200 ms later at the earliest; needs iptables and
root), password-rotation (the clients connect as a Redis user of their own
whose password is rotated in the harshest order, within milliseconds: the
new one added on every node, the password file rewritten, the old one
removed and every connection of the user killed; Apollo reads the file for
every new connection, go-redis-v9 and legacy-2019 were given the password
read at start). Exit code 1 when apollo misses the SLO.`

func runDrill(ctx context.Context, e env, args []string) error {
	cfg := drill.DefaultConfig()
	fs := newFlagSet(e, "drill", drillSynopsis)
	scenario := fs.String("scenario", string(cfg.Scenario), "failure to drill")
	configs := fs.String("configs", strings.Join(cfg.Configs, ","), "client configurations to compare, in order")
	fs.DurationVar(&cfg.Plan.Duration, "duration", cfg.Plan.Duration, "load duration per configuration")
	fs.DurationVar(&cfg.Plan.FaultAt, "fault-at", cfg.Plan.FaultAt, "when the fault starts")
	fs.DurationVar(&cfg.Plan.HealAt, "heal-at", 0, "heal the fault during the run at this time (default: full-outage heals at 2/3 of the run, others after it)")
	fs.IntVar(&cfg.Plan.Workers, "workers", cfg.Plan.Workers, "concurrent callers")
	fs.IntVar(&cfg.Plan.Pipeline, "pipeline", cfg.Plan.Pipeline, "drivers per batch read")
	fs.DurationVar(&cfg.Plan.CallTimeout, "call-timeout", cfg.Plan.CallTimeout, "deadline of one call")
	fs.IntVar(&cfg.Drivers, "drivers", cfg.Drivers, "drivers to seed")
	fs.DurationVar(&cfg.Cluster.NodeTimeout, "node-timeout", cfg.Cluster.NodeTimeout, "cluster-node-timeout of the local cluster")
	fs.Float64Var(&cfg.SLO.MinCallSuccess, "slo-success", cfg.SLO.MinCallSuccess, "SLO: minimum share of fully answered calls for apollo")
	fs.DurationVar(&cfg.SLO.MaxLatency, "slo-max-latency", cfg.SLO.MaxLatency, "SLO: maximum call latency for apollo")
	jsonOut := fs.String("json", "", "write the result as JSON to this file")
	htmlOut := fs.String("html", "", "write a self-contained HTML report to this file")
	svgOut := fs.String("svg", "", "write the chart as SVG to this file")
	render := fs.String("render", "", "do not run: render --html/--svg from a --json file of an earlier run")
	redisAddrs := fs.String("redis-addrs", "", "drill an existing cluster instead of local ones: only replica-hang (CLIENT PAUSE on a replica); seeds and then deletes apollo-drill-* drivers")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *render != "" {
		return renderDrill(*render, *htmlOut, *svgOut)
	}
	var err error
	if cfg.Scenario, err = drill.ParseScenario(*scenario); err != nil {
		return usageError{err}
	}
	if cfg.Configs, err = drill.ParseConfigs(*configs); err != nil {
		return usageError{err}
	}
	if cfg.Scenario == drill.FullOutage && cfg.Plan.HealAt == 0 {
		cfg.Plan.HealAt = cfg.Plan.FaultAt + (cfg.Plan.Duration-cfg.Plan.FaultAt)/2
	}
	cfg.RedisAddrs = splitList(*redisAddrs)
	if len(cfg.RedisAddrs) > 0 && cfg.Scenario != drill.ReplicaHang {
		return usageError{fmt.Errorf("scenario %s kills, stops or cuts off Redis processes, so it runs only on the local clusters the drill starts itself; with --redis-addrs only replica-hang (CLIENT PAUSE) can run", cfg.Scenario)}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	log := app.NewLogger(app.Config{LogFormat: "text", LogLevel: slog.LevelWarn}, e.stderr)
	res, err := drill.Execute(ctx, cfg, e.stdout, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\n== %s: %s ==\n", res.Scenario, res.Fault)
	drill.WriteTable(e.stdout, res.Configs)
	if err := writeReports(res, *jsonOut, *htmlOut, *svgOut); err != nil {
		return err
	}
	if !res.SLO.Passed {
		return fmt.Errorf("SLO missed: %s", strings.Join(res.SLO.Reasons, "; "))
	}
	fmt.Fprintf(e.stdout, "SLO met: apollo call success ≥ %.4f%%, max latency ≤ %.0f ms\n", 100*res.SLO.MinCallSuccess, res.SLO.MaxLatencyMs)
	return nil
}

func renderDrill(path, htmlOut, svgOut string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res drill.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeReports(res, "", htmlOut, svgOut)
}

func writeReports(res drill.Result, jsonPath, htmlPath, svgPath string) error {
	if jsonPath != "" {
		if err := writeJSONFile(jsonPath, res); err != nil {
			return err
		}
	}
	return writeOutputs(
		output{htmlPath, func(w io.Writer) error { return drill.WriteHTML(w, res) }},
		output{svgPath, func(w io.Writer) error { return drill.WriteSVG(w, res) }})
}

// output is a report file a command writes if its flag names one.
type output struct {
	path  string
	write func(io.Writer) error
}

// writeOutputs writes every output that has a path.
func writeOutputs(outs ...output) error {
	for _, out := range outs {
		if out.path == "" {
			continue
		}
		f, err := os.Create(out.path)
		if err != nil {
			return err
		}
		if err := errors.Join(out.write(f), f.Close()); err != nil {
			return fmt.Errorf("write %s: %w", out.path, err)
		}
	}
	return nil
}
