package spike

import (
	"encoding/xml"
	"errors"
	"html"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/chart"
)

const htmlTestCellDeg = 0.005

// htmlTestBox is the cell at column col, row row of a 3 × 3 grid whose
// south-west corner is (1.2725, 103.8425); (1, 1) is the hotspot's.
func htmlTestBox(col, row int) Box {
	lat := 1.2725 + float64(row)*htmlTestCellDeg
	lng := 103.8425 + float64(col)*htmlTestCellDeg
	return Box{Cell: string(rune('a'+3*row+col)) + "cell", MinLat: lat, MaxLat: lat + htmlTestCellDeg, MinLng: lng, MaxLng: lng + htmlTestCellDeg}
}

// htmlTestRun is 20 seconds of a run: outside riders get a driver
// outsideOK of the time during the storm (5–15 s) and always otherwise,
// and nobody outside books in second 12.
func htmlTestRun(name, mode string, storm bool, outsideOK float64, rejectedPerS int) Run {
	run := Run{Name: name, Mode: mode, Storm: storm, FirstTripAfter: -1}
	for t := range 20 {
		in := Counts{Requested: 10}
		out := Counts{Requested: 10, Allocated: 10, LatencyP99: 12}
		if storm && t >= 5 && t < 15 {
			in = Counts{Requested: 200, Rejected: rejectedPerS, Unallocated: 200 - rejectedPerS}
			out.Allocated = int(10 * outsideOK)
			out.LatencyP99 = 12 / outsideOK
		}
		if t == 12 {
			out = Counts{}
		}
		run.Seconds = append(run.Seconds, Second{T: t, Inside: in, Outside: out, RedisCmds: 1500})
	}
	for row := range 3 {
		for col := range 3 {
			c := CellStat{Box: htmlTestBox(col, row), Requested: 20, Allocated: 20, Trips: 20}
			if storm && col == 1 && row == 1 {
				c = CellStat{Box: htmlTestBox(col, row), Requested: 2000, Rejected: 10 * rejectedPerS, Unallocated: 2000 - 10*rejectedPerS, Trips: 3}
			}
			run.Grid = append(run.Grid, c)
		}
	}
	return run
}

func htmlTestReport() *Report {
	off := htmlTestRun("off", "off", true, 0.6, 0)
	off.Errors = []string{`booking: <script>alert("x")</script> & more`}
	on := htmlTestRun("on", "on", true, 1, 150)
	on.FirstTripAfter = 3 * time.Second
	return &Report{
		Settings: Settings{Seed: 7, Duration: 20 * time.Second, StormStart: 5 * time.Second, StormEnd: 15 * time.Second,
			BaseRate: 20, SpikeMultiplier: 20, BucketSeconds: 5, Threshold: 30, CellBits: 30, Primaries: 3, Replicas: 2},
		Hotspot: Hotspot{Lat: 1.28, Lng: 103.85, RadiusM: 300, Cells: []Box{htmlTestBox(1, 1)}},
		Runs:    []Run{htmlTestRun("baseline", "off", false, 1, 0), off, on},
		Summary: []Line{
			{Run: "baseline", OutsideSuccess: 0.982, OutsideP99: 12.3, OutsideAllocP99: 140, Within5Pct: true},
			{Run: "off", OutsideSuccess: 0.614, SuccessVsBase: -0.3747, OutsideP99: 850, P99VsBase: 68.1, OutsideAllocP99: 9100},
			{Run: "on", OutsideSuccess: 0.979, SuccessVsBase: -0.0031, OutsideP99: 12.6, P99VsBase: 0.024, OutsideAllocP99: 150, InsideRejected: 1500, Within5Pct: true},
		},
	}
}

// htmlTestOutageReport is the outage variant: a single "on" run, no baseline.
func htmlTestOutageReport() *Report {
	r := htmlTestReport()
	outage := htmlTestRun("outage", "on", true, 0.9, 0)
	for t := 8; t < 11; t++ { // Spampede cannot count: it admits, and the store answers 503
		outage.Seconds[t].Inside.FailOpen = 200
		outage.Seconds[t].Outside.Failed = 1
	}
	r.Runs = []Run{outage}
	r.Settings.Outage = &Window{From: 8, To: 11}
	r.Summary = []Line{{Run: "outage", OutsideSuccess: 0.9, OutsideP99: 13.3, Within5Pct: true}}
	return r
}

func renderForTest(t *testing.T, write func(io.Writer, *Report) error, r *Report) string {
	t.Helper()
	var b strings.Builder
	if err := write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteHTMLShowsEveryRunTheSummaryAndTheTimeline(t *testing.T) {
	page := html.UnescapeString(renderForTest(t, WriteHTML, htmlTestReport()))
	for _, c := range []struct{ what, want string }{
		{"baseline run", "Run: baseline"},
		{"off run", "Run: off"},
		{"on run", "Run: on"},
		{"inline SVG", "<svg"},
		{"outside success of off", "61.4 %"},
		{"its change vs baseline", "-37.5 %"},
		{"its p99", "850 ms"},
		{"its p99 change", "+6810.0 %"},
		{"its alloc p99", "9.1 s"},
		{"rejected inside with on", "<td>1500</td>"},
		{"the baseline compared with nothing", "<td>—</td>"},
		{"a verdict of yes", `class="yes">yes`},
		{"a verdict of no", `class="no">no`},
		{"the first trip in the storm", "started 3 s into the storm"},
		{"the hotspot's cells outlined", `stroke="#111" stroke-width="2"`},
		{"the hotspot circle", "<ellipse"},
		{"a cell's numbers", "1500 rejected"},
		{"the seconds, folded away", "<details"},
		{"settings", "3 primaries × 2 replicas"},
	} {
		if !strings.Contains(page, c.want) {
			t.Errorf("page lacks %s: %q", c.what, c.want)
		}
	}
}

func TestWriteHTMLEscapesRunErrors(t *testing.T) {
	page := renderForTest(t, WriteHTML, htmlTestReport())
	if strings.Contains(page, "<script>") {
		t.Error("a run's error reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Error("a run's error is missing from the page")
	}
}

func TestWriteHTMLWithoutABaselineComparesNothing(t *testing.T) {
	page := renderForTest(t, WriteHTML, htmlTestOutageReport())
	if strings.Contains(page, "+0.0 %") || !strings.Contains(page, "<td>—</td>") {
		t.Error("the outage run is compared with itself")
	}
	if !strings.Contains(page, "paused 8–11 s") {
		t.Error("the outage window is missing from the settings")
	}
}

func TestWriteHTMLSaysSoWhenARunHasNoCells(t *testing.T) {
	r := htmlTestReport()
	r.Runs[1].Grid = nil
	if page := renderForTest(t, WriteHTML, r); !strings.Contains(page, "No cells recorded") {
		t.Error("a run without cells is not flagged")
	}
}

func TestTimelineSVGRejectsAReportWithoutRuns(t *testing.T) {
	for name, r := range map[string]*Report{"nil": nil, "no runs": {Settings: htmlTestReport().Settings}} {
		if err := TimelineSVG(io.Discard, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if err := WriteHTML(io.Discard, r); err == nil {
			t.Errorf("%s: page written", name)
		}
	}
}

func TestTimelineSVGIsWellFormedAndFiniteWhenSecondsHaveNoRequests(t *testing.T) {
	for name, r := range map[string]*Report{"comparison": htmlTestReport(), "outage": htmlTestOutageReport()} {
		r.Runs[0].Seconds[3] = Second{T: 3} // nothing at all in one second
		svg := renderForTest(t, TimelineSVG, r)
		for _, bad := range []string{"NaN", "Inf"} {
			if strings.Contains(svg, bad) {
				t.Errorf("%s: SVG contains %s", name, bad)
			}
		}
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: SVG is not well-formed XML: %v", name, err)
			}
		}
	}
}

func TestTimelineSVGLabelsEachRunAndTheWindows(t *testing.T) {
	svg := renderForTest(t, TimelineSVG, htmlTestOutageReport())
	for _, want := range []string{">outage<", ">storm<", ">Redis paused<", ">inside: admitted failing open<", "seconds since the run began", "%</text>", " ms</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
}

func TestTimelineSVGBreaksTheSuccessLineAtSecondsWithoutRequests(t *testing.T) {
	secs := []Second{
		{T: 0, Outside: Counts{Requested: 4, Allocated: 4}},
		{T: 1, Outside: Counts{Requested: 4, Allocated: 2}},
		{T: 2}, // nobody booked: no point, rather than 0 %
		{T: 3, Outside: Counts{Requested: 4, Allocated: 3}},
		{T: 5, Outside: Counts{Requested: 4, Allocated: 4}}, // second 4 is missing
	}
	c := chart.New(100, 100)
	p := chart.Panel{W: 100, H: 100, X1: 6}
	c.Plot(p, chart.Linear(0, 1, nil), tlSeries(secs, tlOutsideSuccess, "red", "", 1))
	svg := c.String()
	// Seconds 0–1 joined; 3 and 5 alone, each a dot.
	if got := strings.Count(svg, "<polyline"); got != 1 {
		t.Errorf("%d lines, want 1: %s", got, svg)
	}
	if got := strings.Count(svg, "<circle"); got != 2 {
		t.Errorf("%d dots, want 2: %s", got, svg)
	}
	if !strings.Contains(svg, `points="8.3,0 25,50"`) {
		t.Errorf("seconds 0 and 1 are not plotted mid-second at 100 %% and 50 %%: %s", svg)
	}
}

func TestTimelineSVGShadesTheOutageOnTheRunsRedisWasPausedIn(t *testing.T) {
	for _, c := range []struct {
		name   string
		runs   []Run
		outage bool
		want   []bool
	}{
		{"no outage", []Run{{Name: "baseline"}, {Name: "on", Storm: true}}, false, []bool{false, false}},
		{"the outage run", []Run{{Name: "baseline"}, {Name: "outage", Storm: true}}, true, []bool{false, true}},
		{"no run named outage: the storm runs", []Run{{Name: "baseline"}, {Name: "on", Storm: true}}, true, []bool{false, true}},
	} {
		r := &Report{Runs: c.runs}
		if c.outage {
			r.Settings.Outage = &Window{From: 1, To: 2}
		}
		got := outageRuns(r)
		for i, want := range c.want {
			if got[i] != want {
				t.Errorf("%s: run %s shaded = %v, want %v", c.name, c.runs[i].Name, got[i], want)
			}
		}
	}
}

func TestHTMLCellColourRunsFromWhiteToRed(t *testing.T) {
	for _, c := range []struct {
		n, most int
		want    string
	}{
		{0, 100, "#ffffff"},
		{100, 100, "#d72d2d"},
		{50, 100, "#eb9696"},
		{7, 0, "#ffffff"}, // no cell left anyone stranded: no division by zero
		{200, 100, "#d72d2d"},
	} {
		if got := unallocColor(c.n, c.most); got != c.want {
			t.Errorf("unallocColor(%d, %d) = %s, want %s", c.n, c.most, got, c.want)
		}
	}
}

func TestHTMLCellMapShowsAllOfTheHotspotCircle(t *testing.T) {
	r := htmlTestReport()
	r.Hotspot.RadiusM = 2000 // well past the 3 × 3 grid, about 1.7 km a side
	svg := cellMapSVG(r.Runs[0], r.Hotspot, newCellScale(r))
	var doc struct {
		Width    float64 `xml:"width,attr"`
		Ellipses []struct {
			CX float64 `xml:"cx,attr"`
			CY float64 `xml:"cy,attr"`
			RX float64 `xml:"rx,attr"`
			RY float64 `xml:"ry,attr"`
		} `xml:"ellipse"`
	}
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Ellipses) == 0 {
		t.Fatal("no hotspot circle")
	}
	e := doc.Ellipses[0] // the map's; the legend's comes after it
	if e.CX-e.RX < mapPad-0.1 || e.CX+e.RX > doc.Width-mapPad+0.1 || e.CY-e.RY < mapPad-0.1 {
		t.Errorf("the circle (%+v) runs off a map %v px wide", e, doc.Width)
	}
}
