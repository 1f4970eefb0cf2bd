package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Config is one verify run.
type Config struct {
	// Bin is the apollo binary whose `serve` is checked.
	Bin string
	// Instances is how many `apollo serve` processes share the cluster.
	Instances int
	// Duration is how long the workload and the nemesis run.
	Duration time.Duration
	// Faults the nemesis injects, in turn (FaultNames); none: no nemesis.
	Faults []string
	// FaultEvery is the calm between two faults; FaultFor how long each lasts.
	FaultEvery, FaultFor time.Duration
	// Drivers and Riders are the workload's clients.
	Drivers, Riders int
	// Seed makes the workload's and the nemesis's choices repeatable.
	Seed uint64
	// Dir holds the cluster, the instances' logs and the report files.
	Dir string
	// Persistence is what the cluster's nodes keep on disk, which decides
	// what the cluster-restart fault loses.
	Persistence localcluster.Persistence
	// RedisConf are redis.conf lines ("directive value") added to every
	// node's configuration, to see what a setting changes under the faults.
	RedisConf []string
	// ServeFlags are added to every instance's `apollo serve` flags, after
	// verify's own (so they win): "--booking-acks=2", to check a setting.
	ServeFlags []string
	// Progress receives a line per phase and per fault, one write at a
	// time.
	Progress io.Writer
	// Balancer models the load balancer in front of the instances: a
	// request whose connection an instance refused (killed, restarting)
	// goes to the next one, as a balancer retries a refused connection,
	// and an instance that misses two health checks (/readyz, every
	// 250 ms) gets no new requests until it answers one. Without it each
	// request goes to its instance only.
	Balancer bool

	// The instances' settings that bound G4/G5's slack.
	ReservationTTL, AllocationTimeout, ScanEvery, ClaimHold time.Duration
	// LeaseTTL and RenewEvery are the instances' partition leases: a
	// killed instance's bookings wait for its leases to run out.
	LeaseTTL, RenewEvery time.Duration
}

// recoverWithin bounds the wait, after the run, for the cluster to be
// healthy again before its final state is read: a cluster that does not
// heal is a broken run, reported, not a wait without end.
const recoverWithin = 2 * time.Minute

// DefaultConfig is a run of a minute with every fault.
func DefaultConfig() Config {
	return Config{Instances: 2, Duration: time.Minute, Faults: FaultNames(), FaultEvery: 3 * time.Second, FaultFor: 6 * time.Second,
		Drivers: 12, Riders: 16, Seed: 1, ReservationTTL: 3 * time.Second, AllocationTimeout: 10 * time.Second,
		ScanEvery: 250 * time.Millisecond, ClaimHold: 3 * time.Second, LeaseTTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, Persistence: localcluster.PersistenceAOF, Progress: io.Discard, Balancer: true}
}

// Validate reports an unusable config.
func (c Config) Validate() error {
	var errs []error
	if c.Bin == "" {
		errs = append(errs, errors.New("the apollo binary to check is needed (--apollo-bin)"))
	}
	if c.Instances < 1 || c.Instances > 8 {
		errs = append(errs, fmt.Errorf("instances must be within [1, 8], got %d", c.Instances))
	}
	if c.Duration <= 0 || c.FaultEvery <= 0 || c.FaultFor <= 0 {
		errs = append(errs, errors.New("duration, fault interval and fault length must be positive"))
	}
	if c.Drivers < 1 || c.Riders < 1 {
		errs = append(errs, errors.New("at least one driver and one rider are needed"))
	}
	for _, f := range c.Faults {
		if _, err := ParseFaults(f); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := localcluster.ParsePersistence(string(c.Persistence)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Slack is how late past a deadline or a reservation's end the checks
// still accept a booking or a reservation being settled: a claim hold or
// the takeover of a killed instance's partitions (its lease and a
// rebalance), whichever is longer, two scans and the sweep's grace.
func (c Config) Slack() time.Duration {
	return max(c.ClaimHold, c.LeaseTTL+c.RenewEvery) + 2*c.ScanEvery + 2*time.Second
}

// CheckMachine reports what this machine lacks for the run (redis-server;
// iptables and root for a partition, a cut path or a lossy node, redis-cli
// for a reshard), before
// anything is started.
func (c Config) CheckMachine(ctx context.Context) error {
	if err := localcluster.CheckInstalled(localcluster.DefaultConfig()); err != nil {
		return err
	}
	faults := scheduled(c.Faults)
	if usesFault(faults, "reshard") {
		if _, err := exec.LookPath("redis-cli"); err != nil {
			return fmt.Errorf("the reshard fault needs redis-cli (apt-get install redis-tools; or choose --faults without it): %w", err)
		}
	}
	for _, f := range []string{"primary-partition", "instance-partition", "instance-primary-partition", "instance-replica-partition", "instance-primary-oneway", "primary-lossy", "replica-lossy", "instance-lossy"} {
		if !usesFault(faults, f) {
			continue
		}
		if err := localcluster.CheckFirewall(ctx); err != nil {
			return fmt.Errorf("the %s fault cannot run here: %w (choose --faults without it)", f, err)
		}
	}
	return nil
}

// Run starts a local 3 × 2 cluster and the instances, runs the workload
// under the nemesis, lets the instances settle, and returns the history
// with the final state read from the primaries. Everything it started is
// stopped before it returns.
func Run(ctx context.Context, cfg Config) (h History, err error) {
	if err := cfg.Validate(); err != nil {
		return h, err
	}
	var sayMu sync.Mutex // the nemesis says its faults from a goroutine of its own
	say := func(format string, a ...any) {
		sayMu.Lock()
		defer sayMu.Unlock()
		fmt.Fprintf(cfg.Progress, "verify: "+format+"\n", a...)
	}
	if err := cfg.CheckMachine(ctx); err != nil {
		return h, err
	}
	lc := localcluster.DefaultConfig()
	lc.Dir, lc.NodeTimeout, lc.Persistence, lc.OwnAddrs = cfg.Dir, 2*time.Second, cfg.Persistence, true
	// The ACL log keeps every kind of refusal of the run (rights_missing).
	lc.ExtraArgs = append(append(lc.ExtraArgs, "cluster-allow-reads-when-down yes", fmt.Sprintf("acllog-max-len %d", aclLogLen)), cfg.RedisConf...)
	say("starting a %d × %d cluster (persistence %s)", lc.Primaries, lc.Replicas, lc.Persistence)
	c, err := localcluster.Start(ctx, lc)
	if err != nil {
		return h, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()

	rules, err := writeRules(cfg.Dir)
	if err != nil {
		return h, err
	}
	logs, err := os.Create(filepath.Join(cfg.Dir, "instances.log"))
	if err != nil {
		return h, err
	}
	defer logs.Close()
	creds, err := drill.NewCredentials(ctx, c, apolloUser, cfg.Dir, redisstore.ACLRules()...)
	if err != nil {
		return h, err
	}
	args := []string{"--redis-addrs", strings.Join(c.Addrs(), ","), "--log-format", "json",
		"--reservation-ttl", cfg.ReservationTTL.String(), "--allocation-timeout", cfg.AllocationTimeout.String(),
		"--booking-scan-every", cfg.ScanEvery.String(), "--booking-claim-hold", cfg.ClaimHold.String(),
		"--lease-ttl", cfg.LeaseTTL.String(), "--lease-renew-every", cfg.RenewEvery.String(),
		"--retry-min", "200ms", "--retry-max", "1s", "--spampede-rules-file", rules}
	args = append(args, "--redis-user", creds.User, "--redis-password-file", creds.File)
	args = supportedFlags(ctx, cfg.Bin, append(args, "--api-request-timeout", clientTimeout.String()))
	// A build without --redis-password-file connects as the default
	// user, which handshake, password-rotation and rights-revoked do not
	// touch: they would pass having tested nothing.
	if !slices.Contains(args, "--redis-password-file") {
		for _, f := range scheduled(cfg.Faults) {
			for _, part := range faultParts(f) {
				if part == "handshake" || part == "password-rotation" || part == "rights-revoked" {
					return h, fmt.Errorf("fault %s needs a build of apollo serve with --redis-password-file (%s has none)", part, cfg.Bin)
				}
			}
		}
	}
	args = append(args, cfg.ServeFlags...)
	// A build that knows the flag makes a write's changes before its
	// Apollo-Deadline or never (G6); an older one is not held to it.
	deadlines := slices.Contains(args, "--api-request-timeout")
	var instances []*Instance
	defer func() {
		for _, in := range instances {
			err = errors.Join(err, in.Stop())
		}
	}()
	// Each instance connects to Redis from an address of its own, so that
	// instance-partition can cut one off (an older build without the flag
	// connects from 127.0.0.1, and cannot be).
	ownSource := len(supportedFlags(ctx, cfg.Bin, []string{"--redis-source-addr", "127.0.0.1"})) > 0
	for i := range cfg.Instances {
		source, err := c.ClientHost(i)
		if err != nil {
			return h, err
		}
		inArgs := args
		if ownSource {
			inArgs = append(slices.Clone(args), "--redis-source-addr", source)
		}
		in := NewInstance(fmt.Sprintf("apollo-%d", i), cfg.Bin, inArgs, &syncWriter{w: logs})
		if ownSource {
			in.RedisSource = source
		}
		if err := in.Start(ctx); err != nil {
			return h, err
		}
		instances = append(instances, in)
		say("%s serving on %s", in.Name, in.API())
	}

	h.Start = time.Now()
	h.ReservationTTL, h.AllocationTimeout, h.Slack, h.Instances = cfg.ReservationTTL, cfg.AllocationTimeout, cfg.Slack(), cfg.Instances
	h.ServeFlags = cfg.ServeFlags
	rec := newRecorder(h.Start, clientTimeout, deadlines)
	w := &workload{rec: rec, instances: instances, drivers: cfg.Drivers, riders: cfg.Riders, seed: cfg.Seed,
		center: [2]float64{1.3000, 103.8000}, bookings: map[string]bool{}}
	if cfg.Balancer {
		w.health = newBalancer(instances)
		rec.next, rec.tries = w.after, len(instances)
		h.Balancer = true
	}
	n := &nemesis{c: c, creds: creds, instances: instances, faults: cfg.Faults, every: cfg.FaultEvery, hold: cfg.FaultFor,
		rng: rand.New(rand.NewPCG(cfg.Seed, 7)), start: h.Start,
		say: func(line string) { say("%s (%d operations so far)", line, rec.count()) }}

	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.run(runCtx) }()
	if w.health != nil {
		wg.Go(func() { w.health.run(runCtx) })
	}
	if len(cfg.Faults) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); n.run(runCtx) }()
	}
	say("workload of %d drivers and %d riders for %s, faults: %s", cfg.Drivers, cfg.Riders, cfg.Duration, strings.Join(cfg.Faults, ", "))
	wg.Wait()
	h.Ops, h.Faults = rec.history(), n.events

	// Every instance up again, the cluster healthy, then time for every
	// booking to reach its deadline and every reservation to be settled.
	for _, in := range instances {
		if !in.Running() {
			if err := in.Start(ctx); err != nil {
				return h, err
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		return h, fmt.Errorf("the cluster did not recover within %s: %w", recoverWithin, err)
	}
	settle := cfg.AllocationTimeout + cfg.ReservationTTL + cfg.Slack()
	say("%d operations recorded; settling for %s", len(h.Ops), settle)
	if !sleep(ctx, settle) {
		return h, ctx.Err()
	}
	h.Final, err = readFinal(ctx, c, instances, w.bookingIDs(), w.driverIDs)
	var aclErr error
	if h.Denials, h.ACLLogRead, aclErr = readDenials(ctx, c, creds.User); aclErr != nil {
		say("%s cannot be judged: %v", CodeRightsMissing, aclErr)
	}
	if h.HostClockStep = clockStep(h.Start); h.HostClockStep.Abs() > clockStepBound {
		say("this host's clock stepped by %s during the run (wall time against monotonic time): %s cannot be judged", h.HostClockStep.Round(time.Millisecond), CodeClockOff)
	}
	return h, err
}

// supportedFlags drops the flags (with their values) that bin's serve does
// not know, so that an older build can be checked: it then runs with its
// own defaults for them, and the checks' slack must allow for that.
func supportedFlags(ctx context.Context, bin string, args []string) []string {
	help, _ := exec.CommandContext(ctx, bin, "help", "serve").CombinedOutput()
	var out []string
	for i := 0; i+1 < len(args); i += 2 {
		if strings.Contains(string(help), "  -"+strings.TrimPrefix(args[i], "--")+" ") {
			out = append(out, args[i], args[i+1])
		}
	}
	return out
}

// clientTimeout is how long the workload's clients wait for an answer, and
// the Apollo-Deadline they send with a write.
const clientTimeout = 3 * time.Second

// writeRules writes a Spampede rule set that never trips: the workload
// books in one place on purpose, to make bookings compete for drivers.
func writeRules(dir string) (string, error) {
	rs := spampede.DefaultRuleSet()
	for i := range rs.Rules {
		rs.Rules[i].Threshold = 1_000_000
	}
	raw, err := json.Marshal(rs)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "spampede-rules.json")
	return p, os.WriteFile(p, raw, 0o600)
}

// readFinal reads every booking and driver of the run from its primary,
// and the rules each instance serves.
func readFinal(ctx context.Context, c *localcluster.Cluster, instances []*Instance, bookingIDs, driverIDs []string) (Final, error) {
	f := Final{At: time.Now(), Bookings: map[string]State{}, Drivers: map[string]State{}, Rules: map[string]string{}}
	rc := redisroute.DefaultConfig()
	rc.Addrs, rc.Policy, rc.CallTimeout = c.Addrs(), redisroute.Primary, 5*time.Second
	r, err := redisroute.New(ctx, rc, prometheus.NewRegistry(), nil)
	if err != nil {
		return f, err
	}
	defer r.Close()
	ps, err := redisstore.NewPartitions(fleet.DefaultConfig().Partitions)
	if err != nil {
		return f, err
	}
	bs := redisstore.NewBookings(r, 0, ps)
	for _, id := range bookingIDs {
		b, err := bs.Get(ctx, id)
		if errors.Is(err, booking.ErrNotFound) {
			continue
		}
		if err != nil {
			return f, fmt.Errorf("read booking %s: %w", id, err)
		}
		f.Bookings[id] = State{Status: string(b.Status), DriverID: b.DriverID, Version: b.Version,
			ReservedUntil: msOrZero(b.ReservedUntil), Deadline: msOrZero(b.Deadline)}
	}
	ds, err := redisstore.NewDrivers(r, redisstore.DefaultConfig(), driver.DefaultRules())
	if err != nil {
		return f, err
	}
	for _, id := range driverIDs {
		d, err := ds.GetFresh(ctx, id)
		if errors.Is(err, redisstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return f, fmt.Errorf("read driver %s: %w", id, err)
		}
		f.Drivers[id] = State{Status: string(d.Status), BookingID: d.BookingID, Accepted: d.Accepted, Version: d.Version,
			ReservedUntil: msOrZero(d.ReservedUntil)}
	}
	for _, in := range instances {
		f.Rules[in.Name], err = get(ctx, in.Admin()+"/v1/spampede/rules")
		if err != nil {
			return f, fmt.Errorf("rules of %s: %w", in.Name, err)
		}
	}
	return f, nil
}

func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(raw), err
}

// syncWriter serialises writes of several processes' logs into one file.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
