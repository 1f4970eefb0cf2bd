package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// Config is one drill: a scenario, the client configurations to compare,
// the load, and the SLO Apollo must meet.
type Config struct {
	Scenario Scenario
	Configs  []string
	Plan     Plan
	Drivers  int
	Cluster  localcluster.Config
	SLO      SLO
	// RedisAddrs, if set, drills this existing cluster instead of starting
	// local ones (only replica-hang, through CLIENT PAUSE).
	RedisAddrs []string
}

// DefaultConfig is the 2019 incident: 3 × 2 cluster, 16 workers, pipelines
// of 20, one minute, fault after 10 s.
func DefaultConfig() Config {
	cl := localcluster.DefaultConfig()
	// Every configuration runs on the same cluster settings; this one lets
	// replicas serve reads while a failed primary is being replaced.
	cl.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
	return Config{
		Scenario: ReplicaCrash,
		Configs:  ConfigNames(),
		Plan:     Plan{Workers: 16, Pipeline: 20, Duration: 60 * time.Second, FaultAt: 10 * time.Second, CallTimeout: 5 * time.Second, Seed: 1},
		Drivers:  10000,
		Cluster:  cl,
		SLO:      DefaultSLO(),
	}
}

// Validate reports a drill that cannot run.
func (c Config) Validate() error {
	var errs []error
	if _, err := ParseScenario(string(c.Scenario)); err != nil {
		errs = append(errs, err)
	}
	if len(c.Configs) == 0 {
		errs = append(errs, errors.New("no client configuration to drill"))
	}
	if c.Drivers < c.Plan.Pipeline || c.Drivers > 1_000_000 {
		errs = append(errs, fmt.Errorf("drivers must be within [pipeline, 1000000], got %d", c.Drivers))
	}
	return errors.Join(append(errs, c.Plan.Validate(), c.Cluster.Validate(), c.SLO.Validate())...)
}

// Result is a whole drill, the JSON document of --json.
type Result struct {
	Scenario string   `json:"scenario"`
	Fault    string   `json:"fault"`
	Workers  int      `json:"workers"`
	Pipeline int      `json:"pipeline"`
	Duration float64  `json:"duration_s"`
	FaultAtS float64  `json:"fault_at_s"`
	HealAtS  float64  `json:"heal_at_s,omitempty"`
	Configs  []Report `json:"configs"`
	SLO      Verdict  `json:"slo"`
}

// Execute runs the drill for each configuration in turn, each on a fresh
// local cluster, printing a line per second to out, and judges Apollo
// against the SLO.
func Execute(ctx context.Context, cfg Config, out io.Writer, log *slog.Logger) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Scenario: string(cfg.Scenario), Workers: cfg.Plan.Workers, Pipeline: cfg.Plan.Pipeline,
		Duration: cfg.Plan.Duration.Seconds(), FaultAtS: cfg.Plan.FaultAt.Seconds(), HealAtS: cfg.Plan.HealAt.Seconds()}
	if len(cfg.RedisAddrs) > 0 {
		if err := executeExternal(ctx, cfg, cfg.RedisAddrs, out, log, &res); err != nil {
			return res, err
		}
		res.SLO = cfg.SLO.Judge(res.Configs)
		return res, nil
	}
	if cfg.Scenario.onClientsPath() {
		if err := localcluster.CheckFirewall(ctx); err != nil {
			return res, fmt.Errorf("scenario %s cannot run here: %w", cfg.Scenario, err)
		}
	}
	for _, name := range cfg.Configs {
		rep, fault, err := runConfig(ctx, cfg, name, out, log)
		if err != nil {
			return res, fmt.Errorf("config %s: %w", name, err)
		}
		res.Fault = fault
		res.Configs = append(res.Configs, rep)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	res.SLO = cfg.SLO.Judge(res.Configs)
	return res, nil
}

func runConfig(ctx context.Context, cfg Config, name string, out io.Writer, log *slog.Logger) (Report, string, error) {
	fmt.Fprintf(out, "\n== %s: starting a fresh %d × %d cluster (node timeout %s) ==\n", name, cfg.Cluster.Primaries, cfg.Cluster.Replicas, cfg.Cluster.NodeTimeout)
	cl := cfg.Cluster
	if cfg.Scenario.onClientsPath() {
		cl.OwnAddrs = true // addresses of its own, so that a rule cuts its clients alone
	}
	c, err := localcluster.Start(ctx, cl)
	if err != nil {
		return Report{}, "", err
	}
	defer c.Close()
	fmt.Fprintf(out, "seeding %d drivers through the driver store...\n", cfg.Drivers)
	ids, err := seedDrivers(ctx, c.Addrs(), cfg.Drivers, cfg.Cluster.Replicas)
	if err != nil {
		return Report{}, "", err
	}
	var creds *Credentials
	if cfg.Scenario.needsUser() {
		if creds, err = NewCredentials(ctx, c, "drill", c.Dir()); err != nil {
			return Report{}, "", err
		}
	}
	fault, err := cfg.Scenario.Fault(ctx, c, creds)
	if err != nil {
		return Report{}, "", err
	}
	source, err := cfg.Scenario.clientsHost(c)
	if err != nil {
		return Report{}, "", err
	}
	read, closeFn, err := batchReader(ctx, name, c.Addrs(), source, creds, log)
	if err != nil {
		return Report{}, "", err
	}
	defer closeFn()
	fmt.Fprintf(out, "running %s for %s: %d workers × batch reads of %d drivers; %s at %s\n",
		name, cfg.Plan.Duration, cfg.Plan.Workers, cfg.Plan.Pipeline, fault.Name(), cfg.Plan.FaultAt)
	rep, err := RunLoad(ctx, cfg.Plan, ids, read, fault, func(s Second) { WriteSecond(out, name, s) })
	rep.Name = name
	if err != nil {
		return rep, fault.Name(), err
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return rep, fault.Name(), fmt.Errorf("cluster not healthy after the drill: %w", err)
	}
	return rep, fault.Name(), nil
}
