package capacity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// OpsConfig is the per-operation measurement: one instance on a fresh
// cluster, built but not serving (no background work runs, so every
// command counted is the operation's), each operation run Count times by
// Callers goroutines at once.
type OpsConfig struct {
	Count   int
	Callers int
	Cluster localcluster.Config
}

// DefaultOpsConfig: 2,000 of each operation by 16 callers on a 3 × 1 cluster.
func DefaultOpsConfig() OpsConfig {
	cc := localcluster.DefaultConfig()
	cc.Replicas = 1
	return OpsConfig{Count: 2000, Callers: 16, Cluster: cc}
}

// OpRow is what one operation costs Redis.
type OpRow struct {
	Op string `json:"op"`
	// Sent, Executed and RoundTrips per operation: the commands the
	// router sent (a script is one), every command Redis executed (INFO
	// total_commands_processed: a script's own calls counted too), and
	// the requests the router sent to nodes (a pipeline to one node is one).
	Sent       float64 `json:"sent"`
	Executed   float64 `json:"executed"`
	RoundTrips float64 `json:"round_trips"`
	// RedisCPUMicros is the CPU the Redis processes spent per operation
	// (INFO cpu, user + system, every node, replicas' replication
	// included), with Callers callers at once; PerCore is 1e6 over it:
	// operations per second one Redis core sustains.
	RedisCPUMicros float64 `json:"redis_cpu_us"`
	PerCore        float64 `json:"per_core"`
	// ApolloCPUMicros is the CPU this process (the instance, and the
	// measuring callers) spent per operation: what a fleet of instances pays.
	ApolloCPUMicros float64 `json:"apollo_cpu_us"`
	// PerSecond is what this machine did, client and Redis sharing its cores.
	PerSecond float64 `json:"per_second"`
}

// op is one measured operation: prepare runs before counting (it may
// create what op i needs), op(i) is the i-th operation.
type op struct {
	name    string
	prepare func(ctx context.Context, n int) error
	do      func(ctx context.Context, i int) error
}

// Ops measures each operation.
func Ops(ctx context.Context, cfg OpsConfig, say Progress) ([]OpRow, error) {
	if cfg.Count < 1 || cfg.Callers < 1 {
		return nil, errors.New("capacity: count and callers must be positive")
	}
	say("starting a %d × %d cluster and one instance (not serving: no background work)", cfg.Cluster.Primaries, cfg.Cluster.Replicas)
	c, err := localcluster.Start(ctx, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rulesFile, err := writeRules(c, neverTrips, tripsAtOnce)
	if err != nil {
		return nil, err
	}
	acfg := app.DefaultConfig()
	acfg.Redis.Addrs, acfg.SpampedeRulesFile = c.Addrs(), rulesFile
	if cfg.Cluster.Replicas == 0 {
		acfg.BookingAcks = 0
	}
	a, err := app.New(ctx, acfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	var rows []OpRow
	for _, o := range operations(a, cfg.Count) {
		if o.prepare != nil {
			if err := o.prepare(ctx, cfg.Count); err != nil {
				return rows, fmt.Errorf("%s: prepare: %w", o.name, err)
			}
		}
		row, err := measure(ctx, c, a.Gatherer(), o, cfg)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", o.name, err)
		}
		say("%-34s %5.1f commands sent, %5.1f executed, %5.1f round trips, %7.1f µs of Redis CPU", o.name, row.Sent, row.Executed, row.RoundTrips, row.RedisCPUMicros)
		rows = append(rows, row)
	}
	return rows, nil
}

// operations are the measured operations, in an order where each one's
// preparation can use what the earlier left.
func operations(a *app.App, n int) []op {
	drivers := a.DriverAPI()
	now := time.Now
	// Drivers d-0 … d-(n-1) on a 100 × (n/100) grid around the CBD, 50 m
	// apart; bookings b-i book next to driver d-i, so each allocation
	// finds a driver of its own.
	loc := func(i int) driver.Location {
		return driver.Location{Lat: 1.28 + float64(i/100)*0.00045, Lng: 103.83 + float64(i%100)*0.00045}
	}
	var bookingIDs = make([]string, n)
	return []op{
		{name: "driver heartbeat", do: func(ctx context.Context, i int) error {
			_, err := drivers.Heartbeat(ctx, fmt.Sprintf("d-%d", i), loc(i), now())
			return err
		}},
		{name: "driver goes online", do: func(ctx context.Context, i int) error {
			_, err := drivers.Apply(ctx, fmt.Sprintf("d-%d", i), driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now())
			return err
		}},
		{name: "batch read of 20 drivers", do: func(ctx context.Context, i int) error {
			ids := make([]string, 20)
			for k := range ids {
				ids[k] = fmt.Sprintf("d-%d", (i*20+k)%n)
			}
			b, err := drivers.BatchGet(ctx, ids)
			if err == nil && len(b.Drivers) != 20 {
				err = fmt.Errorf("read %d of 20 drivers", len(b.Drivers))
			}
			return err
		}},
		{name: "admission decision (Spampede)", do: func(ctx context.Context, i int) error {
			l := loc(i)
			if d := a.Spampede().Admit(ctx, "car", l.Lat, l.Lng, now()); !d.Admit() {
				return errors.New("turned away")
			}
			return nil
		}},
		{name: "booking created and allocated", do: func(ctx context.Context, i int) error {
			b, err := a.Bookings().Create(ctx, booking.Request{RiderID: fmt.Sprintf("r-%d", i), Service: "car",
				Pickup: loc(i), Dropoff: driver.Location{Lat: 1.35, Lng: 103.9}, IdempotencyKey: "k"})
			if err == nil && b.Status != booking.Allocated {
				err = fmt.Errorf("booking %s", b.Status)
			}
			bookingIDs[i] = b.ID
			return err
		}},
		{name: "driver accepts (booking accepted)", do: func(ctx context.Context, i int) error {
			b, err := a.Bookings().Get(ctx, bookingIDs[i])
			if err != nil {
				return err
			}
			_, err = drivers.Apply(ctx, b.DriverID, driver.Transition{Event: driver.EventAccept, BookingID: b.ID}, now())
			return err
		}},
		{name: "booking created, no driver found", do: func(ctx context.Context, i int) error {
			// Far from every driver: searching after its first attempt.
			b, err := a.Bookings().Create(ctx, booking.Request{RiderID: fmt.Sprintf("s-%d", i), Service: "car",
				Pickup:  driver.Location{Lat: 1.40 + float64(i%50)*0.001, Lng: 103.70 + float64(i/50)*0.001},
				Dropoff: driver.Location{Lat: 1.35, Lng: 103.9}, IdempotencyKey: "k"})
			if err == nil && b.Status != booking.Searching {
				err = fmt.Errorf("booking %s", b.Status)
			}
			return err
		}},
		{name: "booking turned away (Spampede)", prepare: func(ctx context.Context, _ int) error {
			// One miss trips the cell (and its neighbours) for bikes.
			return a.Spampede().RecordUnallocated(ctx, "bike", turnedAway.Lat, turnedAway.Lng, now())
		}, do: func(ctx context.Context, i int) error {
			_, err := a.Bookings().Create(ctx, booking.Request{RiderID: fmt.Sprintf("t-%d", i), Service: "bike",
				Pickup: turnedAway, Dropoff: driver.Location{Lat: 1.35, Lng: 103.9}, IdempotencyKey: "k"})
			var hd *booking.HighDemandError
			if !errors.As(err, &hd) {
				return fmt.Errorf("want turned away, got %v", err)
			}
			return nil
		}},
	}
}

// tripsAtOnce is a Spampede rule that turns bikes away after one booking
// without a driver in the cell: what a turned-away booking costs is the
// cost that counts in a storm, when most bookings in the hotspot are.
var tripsAtOnce = spampede.Rule{Name: "trips-at-once", Services: []string{"bike"},
	MinLat: 1.15, MaxLat: 1.50, MinLng: 103.55, MaxLng: 104.10, CellBits: 30, BucketSeconds: 600, Threshold: 1, HoldDownSeconds: 600}

// turnedAway is where the turned-away bookings book.
var turnedAway = driver.Location{Lat: 1.30, Lng: 103.85}

// measure runs o cfg.Count times with cfg.Callers at once and counts.
func measure(ctx context.Context, c *localcluster.Cluster, g prometheus.Gatherer, o op, cfg OpsConfig) (OpRow, error) {
	cmds0, err := c.CommandsProcessed(ctx)
	if err != nil {
		return OpRow{}, err
	}
	rt0, sent0, err := routerCounts(g)
	if err != nil {
		return OpRow{}, err
	}
	cpu0, err := c.CPUSeconds(ctx)
	if err != nil {
		return OpRow{}, err
	}
	self0 := SelfCPU()
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Count {
					return
				}
				if err := o.do(ctx, i); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("operation %d: %w", i, err) })
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	self1 := SelfCPU()
	if firstErr != nil {
		return OpRow{}, firstErr
	}
	cpu1, err := c.CPUSeconds(ctx)
	if err != nil {
		return OpRow{}, err
	}
	rt1, sent1, err := routerCounts(g)
	if err != nil {
		return OpRow{}, err
	}
	cmds1, err := c.CommandsProcessed(ctx)
	if err != nil {
		return OpRow{}, err
	}
	n := float64(cfg.Count)
	// The INFO commands of the counting itself: one per node per reading
	// (two readings of stats, two of cpu, inside the window).
	own := float64(3 * len(c.Nodes()))
	row := OpRow{Op: o.name, Sent: (sent1 - sent0) / n, Executed: (float64(cmds1-cmds0) - own) / n, RoundTrips: (rt1 - rt0) / n,
		RedisCPUMicros: (cpu1 - cpu0) * 1e6 / n, ApolloCPUMicros: (self1 - self0) * 1e6 / n, PerSecond: n / took.Seconds()}
	if row.RedisCPUMicros > 0 {
		row.PerCore = 1e6 / row.RedisCPUMicros
	}
	return row, nil
}

// routerCounts is the router's requests to nodes so far (the sum of its
// per-node latency histograms' counts and its per-node errors) and the
// commands it has sent.
func routerCounts(g prometheus.Gatherer) (trips, sent float64, err error) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "apollo_redis_node_latency_seconds":
				trips += float64(m.GetHistogram().GetSampleCount())
			case "apollo_redis_node_errors_total":
				trips += m.GetCounter().GetValue()
			case "apollo_redis_commands_total":
				sent += m.GetCounter().GetValue()
			}
		}
	}
	return trips, sent, nil
}

// SelfCPU is the CPU seconds this process has used (user + system; the
// Redis nodes are other processes). Benchmarks report CPU per call with it.
func SelfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
