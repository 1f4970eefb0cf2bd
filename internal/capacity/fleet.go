package capacity

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// FleetConfig is one fleet measurement: for each instance count, a fresh
// cluster, that many Apollo instances in this process, and Bookings
// bookings created over CreateOver, spread over the instances as a load
// balancer would, in a city with no driver: every booking searches until
// its deadline, retried on its backoff schedule, which is the background
// work the fleet must share rather than repeat.
type FleetConfig struct {
	Instances         []int
	Bookings          int
	CreateOver        time.Duration
	AllocationTimeout time.Duration
	Partitions        int
	Seed              uint64
	Cluster           localcluster.Config
}

// DefaultFleetConfig: 1, 2 and 4 instances, 300 bookings over 5 s, 20 s
// deadlines, 64 partitions, on a 3 × 1 cluster.
func DefaultFleetConfig() FleetConfig {
	cc := localcluster.DefaultConfig()
	cc.Replicas = 1
	return FleetConfig{Instances: []int{1, 2, 4}, Bookings: 300, CreateOver: 5 * time.Second,
		AllocationTimeout: 20 * time.Second, Partitions: 64, Seed: 1, Cluster: cc}
}

// Validate reports an unusable config.
func (c FleetConfig) Validate() error {
	if len(c.Instances) == 0 || c.Bookings < 1 || c.CreateOver <= 0 || c.AllocationTimeout <= 0 {
		return errors.New("capacity: instances, bookings, create-over and allocation timeout must be positive")
	}
	for _, n := range c.Instances {
		if n < 1 || n > 16 {
			return fmt.Errorf("capacity: instance counts must be 1 to 16, got %d", n)
		}
	}
	return c.Cluster.Validate()
}

// FleetRow is what one instance count cost.
type FleetRow struct {
	Instances int `json:"instances"`
	Bookings  int `json:"bookings"`
	// Attempts is allocation attempts, the first (made as a booking is
	// created) included, over every instance.
	Attempts           int64   `json:"attempts"`
	AttemptsPerBooking float64 `json:"attempts_per_booking"`
	// Commands is every command Redis processed from the first create to
	// the last deadline (INFO total_commands_processed, every node).
	Commands int64 `json:"commands"`
	// CommandsPerBookingSecond is Commands over the open booking-seconds
	// (bookings × allocation timeout).
	CommandsPerBookingSecond float64 `json:"commands_per_booking_second"`
	// IndexByShard is the open-index commands clients sent to each
	// primary (MONITOR, scripts' own calls not counted twice).
	IndexByShard []int64 `json:"index_by_shard"`
	// BusiestShare is the busiest shard's index commands over the mean.
	BusiestShare float64 `json:"busiest_share"`
	// StillOpen is bookings not final a few seconds after the last deadline.
	StillOpen int `json:"still_open"`
}

// Progress hears what the measurement is doing.
type Progress func(format string, args ...any)

// Fleet runs the measurement for each instance count.
func Fleet(ctx context.Context, cfg FleetConfig, say Progress) ([]FleetRow, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var rows []FleetRow
	for _, n := range cfg.Instances {
		row, err := fleetRun(ctx, cfg, n, say)
		if err != nil {
			return rows, fmt.Errorf("%d instances: %w", n, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// counting counts allocation attempts.
type counting struct {
	booking.Allocator
	n *atomic.Int64
}

func (c counting) Allocate(ctx context.Context, id, service string, p driver.Location, now time.Time) (string, time.Time, error) {
	c.n.Add(1)
	return c.Allocator.Allocate(ctx, id, service, p, now)
}

func fleetRun(ctx context.Context, cfg FleetConfig, n int, say Progress) (FleetRow, error) {
	row := FleetRow{Instances: n}
	say("%d instances: starting a %d × %d cluster", n, cfg.Cluster.Primaries, cfg.Cluster.Replicas)
	c, err := localcluster.Start(ctx, cfg.Cluster)
	if err != nil {
		return row, err
	}
	defer c.Close()
	var attempts atomic.Int64
	apps, stop, err := startFleet(ctx, cfg, c, n, &attempts)
	if err != nil {
		return row, err
	}
	defer stop()
	if err := converge(ctx, apps, cfg.Partitions); err != nil {
		return row, err
	}
	primaries := c.Nodes()[:cfg.Cluster.Primaries]
	mon, err := monitorIndex(ctx, primaries)
	if err != nil {
		return row, err
	}
	before, err := c.CommandsProcessed(ctx)
	if err != nil {
		mon.stop()
		return row, err
	}
	say("%d instances: %d bookings over %s, none of which can find a driver; waiting out their %s deadlines", n, cfg.Bookings, cfg.CreateOver, cfg.AllocationTimeout)
	ids, err := createAll(ctx, cfg, apps)
	if err != nil {
		mon.stop()
		return row, err
	}
	if err := sleep(ctx, cfg.AllocationTimeout+2*time.Second); err != nil {
		mon.stop()
		return row, err
	}
	after, err := c.CommandsProcessed(ctx)
	row.IndexByShard = mon.stop()
	if err != nil {
		return row, err
	}
	for _, id := range ids {
		if b, err := apps[0].Bookings().Get(ctx, id); err != nil || b.Status.Open() {
			row.StillOpen++
		}
	}
	row.Bookings, row.Attempts, row.Commands = len(ids), attempts.Load(), after-before
	row.AttemptsPerBooking = float64(row.Attempts) / float64(max(row.Bookings, 1))
	row.CommandsPerBookingSecond = float64(row.Commands) / (float64(max(row.Bookings, 1)) * cfg.AllocationTimeout.Seconds())
	row.BusiestShare = busiest(row.IndexByShard)
	say("%d instances: %.2f attempts and %.2f commands per open booking per second; busiest shard %.2f × the mean",
		n, row.AttemptsPerBooking, row.CommandsPerBookingSecond, row.BusiestShare)
	return row, nil
}

// startFleet runs n instances in this process, each with its own listeners.
func startFleet(ctx context.Context, cfg FleetConfig, c *localcluster.Cluster, n int, attempts *atomic.Int64) ([]*app.App, func(), error) {
	rulesFile, err := writeRules(c, neverTrips)
	if err != nil {
		return nil, nil, err
	}
	var apps []*app.App
	var wg sync.WaitGroup
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() { cancel(); wg.Wait() }
	for i := range n {
		acfg := app.DefaultConfig()
		acfg.Redis.Addrs = c.Addrs()
		acfg.Listen, acfg.AdminListen, acfg.DrainDelay = "127.0.0.1:0", "127.0.0.1:0", 0
		acfg.SpampedeRulesFile, acfg.InstanceID = rulesFile, fmt.Sprintf("apollo-%d", i+1)
		acfg.Booking.AllocationTimeout, acfg.Fleet.Partitions = cfg.AllocationTimeout, cfg.Partitions
		if cfg.Cluster.Replicas == 0 {
			acfg.BookingAcks = 0
		}
		a, err := app.New(ctx, acfg, slog.New(slog.DiscardHandler),
			app.WrapAllocator(func(al booking.Allocator) booking.Allocator { return counting{al, attempts} }))
		if err == nil {
			err = a.Listen()
			if err != nil {
				a.Close()
			}
		}
		if err != nil {
			stop()
			return nil, nil, err
		}
		apps = append(apps, a)
		wg.Add(1)
		go func() { defer wg.Done(); a.Serve(sctx) }()
	}
	return apps, stop, nil
}

// converge waits until the instances hold every partition between them,
// each its fair share.
func converge(ctx context.Context, apps []*app.App, partitions int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		total, fair := 0, true
		for _, a := range apps {
			k := len(a.Member().Owned())
			total += k
			fair = fair && k >= partitions/len(apps)
		}
		if total == partitions && fair {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d instances hold %d of %d partitions after 15 s", len(apps), total, partitions)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// createAll creates the bookings at an even pace, round robin over the
// instances, at random pickups in Singapore.
func createAll(ctx context.Context, cfg FleetConfig, apps []*app.App) ([]string, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	gap := cfg.CreateOver / time.Duration(cfg.Bookings)
	start := time.Now()
	ids := make([]string, 0, cfg.Bookings)
	for i := range cfg.Bookings {
		if err := sleep(ctx, time.Until(start.Add(time.Duration(i)*gap))); err != nil {
			return ids, err
		}
		req := booking.Request{RiderID: fmt.Sprintf("rider-%d", i), Service: "car", IdempotencyKey: fmt.Sprintf("k-%d", i),
			Pickup:  driver.Location{Lat: 1.25 + rng.Float64()*0.2, Lng: 103.7 + rng.Float64()*0.25},
			Dropoff: driver.Location{Lat: 1.3, Lng: 103.85}}
		b, err := apps[i%len(apps)].Bookings().Create(ctx, req)
		if err != nil {
			return ids, fmt.Errorf("create booking %d: %w", i, err)
		}
		ids = append(ids, b.ID)
	}
	return ids, nil
}

// indexMonitor counts, per primary, the commands clients sent that name
// an open-index partition, from `redis-cli monitor` on each (go-redis's
// MONITOR stops at its first read timeout).
type indexMonitor struct {
	counts []atomic.Int64
	cmds   []*exec.Cmd
	wg     sync.WaitGroup
}

func monitorIndex(ctx context.Context, primaries []*localcluster.Node) (*indexMonitor, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("counting the index commands needs redis-cli (apt-get install redis-tools): %w", err)
	}
	m := &indexMonitor{counts: make([]atomic.Int64, len(primaries))}
	for i, p := range primaries {
		host, port, _ := net.SplitHostPort(p.Addr)
		cmd := exec.Command(cli, "-h", host, "-p", port, "monitor")
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			m.stop()
			return nil, fmt.Errorf("redis-cli monitor %s: %w", p.Addr, err)
		}
		m.cmds = append(m.cmds, cmd)
		m.wg.Add(1)
		go func() { // ends when the process's stdout closes
			defer m.wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				// "<time> [<db> <client>] "CMD" ...": a script's own calls
				// are from "lua", already counted as its EVALSHA.
				line := sc.Text()
				if strings.Contains(line, `"apollo:bk:open:{`) && !strings.Contains(line, " lua]") {
					m.counts[i].Add(1)
				}
			}
		}()
	}
	// MONITOR starts asynchronously: give it a moment before counting.
	if err := sleep(ctx, 300*time.Millisecond); err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
}

// stop ends the monitors (by PID) and returns the counts.
func (m *indexMonitor) stop() []int64 {
	time.Sleep(100 * time.Millisecond) // the last lines
	for _, c := range m.cmds {
		_ = c.Process.Kill()
	}
	m.wg.Wait()
	for _, c := range m.cmds {
		_ = c.Wait()
	}
	out := make([]int64, len(m.counts))
	for i := range m.counts {
		out[i] = m.counts[i].Load()
	}
	return out
}

func busiest(xs []int64) float64 {
	var sum, top int64
	for _, x := range xs {
		sum += x
		top = max(top, x)
	}
	if sum == 0 {
		return 0
	}
	return float64(top) / (float64(sum) / float64(len(xs)))
}

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

// neverTrips is a Spampede rule over Singapore that never trips for cars
// (the filter still counts): the measurements book where no driver is, on
// purpose.
var neverTrips = spampede.Rule{Name: "never-trips", Services: []string{"car"},
	MinLat: 1.15, MaxLat: 1.50, MinLng: 103.55, MaxLng: 104.10, CellBits: 30, BucketSeconds: 60, Threshold: 1_000_000, HoldDownSeconds: 60}

// writeRules writes a Spampede rule set to the cluster's directory for an
// instance to load.
func writeRules(c *localcluster.Cluster, rules ...spampede.Rule) (string, error) {
	raw, err := json.Marshal(spampede.RuleSet{Version: 1, Rules: rules})
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir(), "spampede-rules.json")
	return path, os.WriteFile(path, raw, 0o600)
}
