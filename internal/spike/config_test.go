package spike

import (
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

func TestSummaryComparesWithTheBaseline(t *testing.T) {
	runs := []Run{
		{Name: "baseline", Outside: Counts{Requested: 100, Allocated: 100, LatencyP99: 10}},
		{Name: "off", Outside: Counts{Requested: 100, Allocated: 90, LatencyP99: 30}},
		{Name: "on", Outside: Counts{Requested: 100, Allocated: 99, LatencyP99: 10.4}},
	}
	s := summarize(runs)
	if len(s) != 3 || s[1].Within5Pct || !s[2].Within5Pct || s[1].SuccessVsBase > -0.09 || s[1].P99VsBase < 1.9 {
		t.Errorf("summary %+v", s)
	}
	if summarize([]Run{{Name: "outage"}}) != nil {
		t.Error("a run without a baseline was compared with itself")
	}
}

var errTest = errorString("storage unavailable")

type errorString string

func (e errorString) Error() string { return string(e) }
