package spike

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/sim"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Modes of the Spampede filter a drill can compare.
const (
	ModeOff    = "off"    // no rule: every booking is admitted
	ModeShadow = "shadow" // the rule counts what it would reject, and admits
	ModeOn     = "on"     // the rule turns bookings away
)

// Config is one spike drill.
type Config struct {
	Seed     uint64
	Duration time.Duration
	// The storm runs from StormStart to StormEnd after the run begins.
	StormStart, StormEnd time.Duration
	BaseRate             float64 // bookings per second over the whole city
	SpikeMultiplier      float64 // hotspot demand during the storm, in multiples of BaseRate
	Hotspot              driver.Location
	RadiusM              float64
	Modes                []string
	// RepeatBaseline runs the no-spike baseline twice: how far two
	// identical runs differ is the noise floor of every comparison.
	RepeatBaseline bool
	// NoFilterBaseline also runs the no-spike city without the Spampede
	// rule: what the filter costs every booking when nothing is tripped.
	NoFilterBaseline bool
	// Rounds runs all of it this many times, one round after another: a
	// p99 of a few hundred riders moves with the machine's other work, and
	// pooling the rounds' riders is what makes a 5 % comparison mean
	// something.
	Rounds int
	// Outage runs one "on" run with every Redis node paused for OutageFor
	// from OutageAt, instead of the mode comparison.
	Outage              bool
	OutageAt, OutageFor time.Duration
	// Instances is how many Apollo instances share the work, behind a
	// round-robin load balancer.
	Instances int
	// Crash runs one "on" run with the last instance crashed (no
	// hand-back: as SIGKILL) at CrashAt and restarted CrashFor later,
	// instead of the mode comparison.
	Crash             bool
	CrashAt, CrashFor time.Duration

	Drivers           int
	AllocationTimeout time.Duration
	// Allocation does the work of a dispatch engine: each attempt holds
	// one of AllocSlots for AllocCost (ETA and route calls), the shared
	// capacity a spike can exhaust.
	AllocCost  time.Duration
	AllocSlots int
	Workers    int
	// CountAt is when Spampede counts a booking without a driver.
	CountAt booking.CountAt
	// CountRejectedEvery: every n-th booking a tripped cell turns away
	// counts as a miss (0: none).
	CountRejectedEvery int
	Rule               spampede.Rule
	Cluster            localcluster.Config
	City               sim.City
}

// DefaultHotspot is the corner where four Spampede cells meet nearest to
// Raffles Place: a storm there straddles cell edges, so a filter that only
// counted a booking's own cell would see a quarter of it.
func DefaultHotspot(bits uint) driver.Location {
	c, err := geocell.Of(1.2840, 103.8514, bits)
	if err != nil {
		return driver.Location{Lat: 1.2840, Lng: 103.8514}
	}
	b := c.Bounds()
	return driver.Location{Lat: b.MinLat, Lng: b.MinLng}
}

// DefaultConfig is a two-minute drill: an 80 s storm at 20 × the city's
// base rate over an 800 m circle in the CBD.
func DefaultConfig() Config {
	rule := spampede.DefaultRuleSet().Rules[0]
	// Shorter buckets and hold-down than production's, so that an 80 s
	// storm crosses four bucket boundaries and outlasts the hold-down
	// several times: the counts, not the hold-down, keep the hotspot closed.
	rule.BucketSeconds, rule.HoldDownSeconds = 20, 20
	return Config{
		Seed: 1, Duration: 120 * time.Second, StormStart: 20 * time.Second, StormEnd: 100 * time.Second,
		BaseRate: 10, SpikeMultiplier: 20, Hotspot: DefaultHotspot(rule.CellBits), RadiusM: 800,
		Modes: []string{ModeOff, ModeShadow, ModeOn}, RepeatBaseline: true, NoFilterBaseline: true, Rounds: 1,
		OutageAt: 50 * time.Second, OutageFor: 10 * time.Second, Instances: 1, CrashAt: 50 * time.Second, CrashFor: 10 * time.Second,
		Drivers: 2000, AllocationTimeout: 10 * time.Second, AllocCost: 5 * time.Millisecond, AllocSlots: 4, Workers: 4,
		CountAt: booking.DefaultConfig().CountAt, CountRejectedEvery: spampede.DefaultConfig().CountRejectedEvery,
		Rule: rule, Cluster: localcluster.DefaultConfig(), City: sim.Singapore(),
	}
}

// Validate reports every problem.
func (c Config) Validate() error {
	var errs []error
	if c.Duration < 10*time.Second || c.Duration > time.Hour {
		errs = append(errs, fmt.Errorf("duration must be within [10s, 1h], got %s", c.Duration))
	}
	for _, m := range c.Modes {
		if !slices.Contains([]string{ModeOff, ModeShadow, ModeOn}, m) {
			errs = append(errs, fmt.Errorf("unknown mode %q (want off, shadow or on)", m))
		}
	}
	if len(c.Modes) == 0 && !c.Outage {
		errs = append(errs, errors.New("at least one mode is needed"))
	}
	if c.Outage && (c.OutageAt <= 0 || c.OutageFor <= 0 || c.OutageAt+c.OutageFor >= c.Duration) {
		errs = append(errs, fmt.Errorf("the outage (%s from %s) must end within the run (%s)", c.OutageFor, c.OutageAt, c.Duration))
	}
	if c.Instances < 1 || c.Instances > 8 {
		errs = append(errs, fmt.Errorf("instances must be within [1, 8], got %d", c.Instances))
	}
	if c.Crash && (c.Instances < 2 || c.Outage || c.Rounds > 1 || c.CrashAt <= 0 || c.CrashFor <= 0 || c.CrashAt+c.CrashFor >= c.Duration) {
		errs = append(errs, fmt.Errorf("the instance crash needs at least 2 instances, one round, no outage, and must end within the run (%s from %s in %s)", c.CrashFor, c.CrashAt, c.Duration))
	}
	if c.Rounds < 1 || c.Rounds > 10 {
		errs = append(errs, fmt.Errorf("rounds must be within [1, 10], got %d", c.Rounds))
	}
	if c.Outage && c.Rounds > 1 {
		errs = append(errs, errors.New("rounds compare modes; the outage variant is a single run"))
	}
	if c.Drivers < 1 || c.Drivers > 100_000 {
		errs = append(errs, fmt.Errorf("drivers must be within [1, 100000], got %d", c.Drivers))
	}
	if c.AllocationTimeout < time.Second || c.AllocCost < 0 || c.AllocSlots < 1 || c.Workers < 1 {
		errs = append(errs, errors.New("allocation timeout must be at least 1s, alloc cost not negative, alloc slots and workers at least 1"))
	}
	if err := (spampede.RuleSet{Rules: []spampede.Rule{c.Rule}}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.CountRejectedEvery < 0 {
		errs = append(errs, errors.New("count-rejected-every must not be negative"))
	}
	bc := booking.DefaultConfig()
	bc.CountAt = c.CountAt
	if err := bc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Cluster.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, c.demand(true).Validate())...)
}

// demand is the riders of one run: the same seed, so the same riders, in
// every run; the baseline has no storm.
func (c Config) demand(storm bool) sim.Demand {
	d := sim.Demand{BaseRate: c.BaseRate, Duration: c.Duration, City: c.City, Seed: c.Seed,
		Storm: sim.Storm{Center: c.Hotspot, RadiusM: c.RadiusM, Start: c.StormStart, End: c.StormEnd}}
	if storm {
		d.Storm.Multiplier = c.SpikeMultiplier
	}
	return d
}

// rules is the Spampede rule set of a mode.
func (c Config) rules(mode string) spampede.RuleSet {
	if mode == ModeOff {
		return spampede.RuleSet{Version: 1}
	}
	r := c.Rule
	r.Shadow = mode == ModeShadow
	return spampede.RuleSet{Version: 1, Rules: []spampede.Rule{r}}
}
