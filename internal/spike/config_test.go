package spike

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/sim"
	"github.com/apollo-platform/apollo/internal/spampede"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"outage variant", func(c *Config) { c.Outage = true }, ""},
		{"unknown mode", func(c *Config) { c.Modes = []string{"loud"} }, `unknown mode "loud"`},
		{"no mode", func(c *Config) { c.Modes = nil }, "at least one mode"},
		{"too short", func(c *Config) { c.Duration = time.Second }, "duration"},
		{"storm past the end", func(c *Config) { c.StormEnd = c.Duration + time.Second }, "storm"},
		{"outage past the end", func(c *Config) { c.Outage, c.OutageAt = true, c.Duration }, "outage"},
		{"no drivers", func(c *Config) { c.Drivers = 0 }, "drivers"},
		{"no slots", func(c *Config) { c.AllocSlots = 0 }, "alloc slots"},
		{"bad rule", func(c *Config) { c.Rule.Threshold = 0 }, "threshold"},
		{"bad count moment", func(c *Config) { c.CountAt = "later" }, "count moment"},
		{"zero rate", func(c *Config) { c.BaseRate = 0 }, "base rate"},
		{"no rounds", func(c *Config) { c.Rounds = 0 }, "rounds"},
		{"rounds of an outage", func(c *Config) { c.Outage, c.Rounds = true, 2 }, "single run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRulesOfEachMode(t *testing.T) {
	c := DefaultConfig()
	if rs := c.rules(ModeOff); len(rs.Rules) != 0 {
		t.Errorf("off has rules: %+v", rs)
	}
	if rs := c.rules(ModeShadow); len(rs.Rules) != 1 || !rs.Rules[0].Shadow {
		t.Errorf("shadow: %+v", rs)
	}
	if rs := c.rules(ModeOn); len(rs.Rules) != 1 || rs.Rules[0].Shadow {
		t.Errorf("on: %+v", rs)
	}
}

func TestRunsOfADrill(t *testing.T) {
	show := func(ps []plan) string {
		var out []string
		for _, p := range ps {
			s := p.name + ":" + p.mode
			if p.storm {
				s += "+storm"
			}
			if p.outage {
				s += "+outage"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"defaults: baselines run the rule, one runs without it, then each mode with the storm", func(*Config) {},
			"baseline:on baseline-repeat:on baseline-no-filter:off off:off+storm shadow:shadow+storm on:on+storm"},
		{"no repeat, no filter-less baseline", func(c *Config) { c.RepeatBaseline, c.NoFilterBaseline, c.Modes = false, false, []string{ModeOn} },
			"baseline:on on:on+storm"},
		{"rounds repeat it all, named by round", func(c *Config) {
			c.RepeatBaseline, c.NoFilterBaseline, c.Modes, c.Rounds = false, false, []string{ModeOn}, 3
		},
			"baseline:on on:on+storm baseline #2:on on #2:on+storm baseline #3:on on #3:on+storm"},
		{"the outage variant is one run", func(c *Config) { c.Outage = true }, "outage:on+storm+outage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if got := show(c.plans()); got != tc.want {
				t.Errorf("runs %q, want %q", got, tc.want)
			}
		})
	}
}

// The default hotspot sits where cells meet, so the storm straddles edges.
func TestDefaultHotspotStraddlesCellEdges(t *testing.T) {
	c := DefaultConfig()
	if cells := hotspotCells(c.Hotspot, c.RadiusM, c.Rule.CellBits); len(cells) < 4 {
		t.Errorf("the default storm overlaps %d cells, want at least 4", len(cells))
	}
	around := map[string]bool{}
	for _, d := range [][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}} {
		p := sim.Offset(c.Hotspot, d[0], d[1])
		cell, err := geocell.Of(p.Lat, p.Lng, c.Rule.CellBits)
		if err != nil {
			t.Fatal(err)
		}
		around[cell.String()] = true
	}
	if len(around) != 4 {
		t.Errorf("%d cells within a metre of the centre, want 4: it should sit where four cells meet", len(around))
	}
}

func TestTallyCountsEveryFate(t *testing.T) {
	fates := []fate{
		{sent: true, rejected: true, outcome: spampede.Rejected},
		{sent: true, outcome: spampede.ShadowRejected, status: booking.Unallocated, latency: 10 * time.Millisecond},
		{sent: true, outcome: spampede.Admitted, status: booking.Accepted, latency: 20 * time.Millisecond, allocIn: time.Second},
		{sent: true, outcome: spampede.FailOpen, err: errTest, latency: 500 * time.Millisecond},
		{sent: false},
	}
	var tl tally
	for i := range fates {
		tl.add(&fates[i])
	}
	got := tl.counts()
	want := Counts{Requested: 4, Admitted: 2, Rejected: 1, WouldReject: 1, FailOpen: 1, Failed: 1, Allocated: 1, Unallocated: 1,
		LatencyP50: 10, LatencyP99: 20, AllocP50: 1000, AllocP99: 1000, FailedP99: 500}
	if got != want {
		t.Errorf("counts\n got %+v\nwant %+v", got, want)
	}
}

// riders are n outside riders, the first allocated of them got a driver;
// slow of them took slowLat, the rest lat.
func riders(n, allocated, slow int, lat, slowLat time.Duration) samples {
	var t tally
	for i := range n {
		f := fate{sent: true, status: booking.Unallocated, latency: lat}
		if i < allocated {
			f.status = booking.Allocated
		}
		if i < slow {
			f.latency = slowLat
		}
		t.add(&f)
	}
	return samples{storm: t, settled: t}
}

func TestSummaryComparesWithTheBaseline(t *testing.T) {
	ms := time.Millisecond
	runs := []Run{{Name: "baseline", Round: 1}, {Name: "off", Round: 1}, {Name: "on", Round: 1}}
	smps := []samples{riders(100, 100, 0, 10*ms, 0), riders(100, 90, 100, 0, 30*ms), riders(100, 99, 100, 0, 10400*time.Microsecond)}
	s := summarize(runs, smps)
	if len(s) != 3 || s[1].Within5Pct || !s[2].Within5Pct || s[1].SuccessVsBase > -0.09 || s[1].P99VsBase < 1.9 || s[2].Rounds != 1 {
		t.Errorf("summary %+v", s)
	}
	if summarize([]Run{{Name: "outage", Round: 1}}, []samples{{}}) != nil {
		t.Error("a run without a baseline was compared with itself")
	}
}

func TestRoundsArePooled(t *testing.T) {
	ms := time.Millisecond
	runs := []Run{{Name: "baseline", Round: 1}, {Name: "on", Round: 1}, {Name: "baseline #2", Round: 2}, {Name: "on #2", Round: 2}}
	// Round 1's on run has two slow riders: its p99 of 100 is one of them;
	// pooled with round 2, the p99 of 200 is not.
	smps := []samples{riders(100, 100, 0, 10*ms, 0), riders(100, 100, 2, 10*ms, 20*ms), riders(100, 100, 0, 11*ms, 0), riders(100, 100, 0, 10*ms, 0)}
	s := summarize(runs, smps)
	var got []string
	for _, l := range s {
		got = append(got, fmt.Sprintf("%s/%d: p99 %.1f %+.0f%%", l.Run, l.Rounds, l.OutsideP99, 100*l.P99VsBase))
	}
	want := []string{
		"baseline/1: p99 10.0 +0%", "on/1: p99 20.0 +100%", // against round 1's baseline
		"baseline #2/1: p99 11.0 +0%", "on #2/1: p99 10.0 -9%", // against round 2's
		"baseline (2 rounds pooled)/2: p99 11.0 +0%", "on (2 rounds pooled)/2: p99 10.0 -9%",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary\n got %q\nwant %q", got, want)
	}
}

var errTest = errorString("storage unavailable")

type errorString string

func (e errorString) Error() string { return string(e) }
