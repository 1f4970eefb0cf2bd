package spike

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apollo-platform/apollo/internal/chart"
)

// The timeline is a grid of small multiples: one row per run, one column
// per question, every column on one shared scale. Reading down a column
// compares the runs; the baseline is drawn faintly behind every other run
// so that "looks like the baseline" can be seen rather than computed.
const (
	tlWidth    = 900
	tlHeader   = 96 // title, subtitle, legend, column titles
	tlColW     = 300
	tlPlotL    = 54 // y tick labels live inside each column
	tlPlotR    = 14
	tlRowTitle = 20
	tlPlotH    = 92
	tlRowFoot  = 24 // x tick labels
	tlFooter   = 22
	tlRowH     = tlRowTitle + tlPlotH + tlRowFoot
)

const (
	tlColorSuccess  = "#1f77b4"
	tlColorP99      = "#e6550d"
	tlColorBaseline = "#b0b0b0"
	tlColorInside   = "#bdbdbd"
	tlColorRejected = "#d62728"
	tlColorWould    = "#7b3294"
	tlColorFailOpen = "#31a354"
	tlStormFill     = "#deebf7"
	tlOutageFill    = "#fcdcdc"
)

// tlMetric reads one series from a second; ok is false when the second has
// nothing to say (no requests), which breaks the line instead of drawing 0.
type tlMetric func(s Second) (v float64, ok bool)

func tlOutsideSuccess(s Second) (float64, bool) {
	return s.Outside.Success(), s.Outside.Requested > 0
}

func tlOutsideP99(s Second) (float64, bool) {
	return s.Outside.LatencyP99, s.Outside.Requested > 0
}

func tlInsideRequested(s Second) (float64, bool) { return float64(s.Inside.Requested), true }
func tlInsideRejected(s Second) (float64, bool)  { return float64(s.Inside.Rejected), true }
func tlInsideWould(s Second) (float64, bool)     { return float64(s.Inside.WouldReject), true }
func tlInsideFailOpen(s Second) (float64, bool)  { return float64(s.Inside.FailOpen), true }

// tlSeries plots a metric at the middle of each second. A second without a
// value is a NaN and a missing second a gap, so that gaps in the data show
// as gaps in the line.
func tlSeries(secs []Second, m tlMetric, color, dash string, width float64) chart.Series {
	ser := chart.Series{Color: color, Dash: dash, Width: width}
	prev := math.MinInt
	for _, s := range secs {
		v, ok := m(s)
		if !ok {
			v = math.NaN()
		}
		ser.Points = append(ser.Points, chart.Point{X: float64(s.T) + 0.5, Y: v, Gap: s.T != prev+1})
		prev = s.T
	}
	return ser
}

// timeline holds what every row shares: the x range, the shared y axes,
// the baseline to draw behind the others, and the windows.
type timeline struct {
	r          *Report
	dur        float64
	base       *Run
	success    chart.Axis
	p99        chart.Axis
	inside     chart.Axis
	stormFrom  float64
	stormTo    float64
	outage     *Window // nil when Redis was never paused
	outageRuns map[int]bool
	c          *chart.SVG
}

// TimelineSVG draws the drill, second by second, as one standalone SVG:
// for each run, how riders outside the hotspot fared (share who got a
// driver, booking p99 latency) next to what Spampede did inside it.
func TimelineSVG(w io.Writer, r *Report) error {
	if r == nil || len(r.Runs) == 0 {
		return errors.New("spike: timeline of a report without runs")
	}
	tl := newTimeline(r)
	tl.draw()
	_, err := tl.c.WriteTo(w)
	return err
}

func newTimeline(r *Report) *timeline {
	tl := &timeline{r: r, base: baselineRun(r), outageRuns: outageRuns(r)}
	tl.dur = r.Settings.Duration.Seconds()
	var latencies []float64
	insideMax := 0.0
	for _, run := range r.Runs {
		for _, s := range run.Seconds {
			tl.dur = math.Max(tl.dur, float64(s.T+1))
			if v, ok := tlOutsideP99(s); ok {
				latencies = append(latencies, v)
			}
			for _, m := range []tlMetric{tlInsideRequested, tlInsideRejected, tlInsideWould, tlInsideFailOpen} {
				v, _ := m(s)
				insideMax = math.Max(insideMax, v)
			}
		}
	}
	if tl.dur <= 0 {
		tl.dur = 1
	}
	tl.stormFrom, tl.stormTo = r.Settings.StormStart.Seconds(), r.Settings.StormEnd.Seconds()
	if o := r.Settings.Outage; o != nil && o.To > o.From && !math.IsInf(o.To-o.From, 0) {
		tl.outage = o
	}
	tl.success = chart.Linear(0, 1, chart.Percent)
	// Logarithmic by decades: the point is the jump from a few
	// milliseconds to seconds, which a linear axis flattens.
	tl.p99 = chart.LogDecades(latencies, chart.Ms)
	tl.inside = chart.Linear(0, chart.NiceCeil(insideMax), func(v float64) string { return fmt.Sprintf("%g/s", v) })
	return tl
}

// baselineRun is the no-storm reference, if the report has one.
func baselineRun(r *Report) *Run {
	for i := range r.Runs {
		if r.Runs[i].Name == "baseline" {
			return &r.Runs[i]
		}
	}
	for i := range r.Runs {
		if !r.Runs[i].Storm {
			return &r.Runs[i]
		}
	}
	return nil
}

// outageRuns says which runs had Redis paused: the run named "outage" when
// there is one, since the settings window is drill-wide; otherwise every
// storm run.
func outageRuns(r *Report) map[int]bool {
	runs := map[int]bool{}
	if r.Settings.Outage == nil {
		return runs
	}
	for i, run := range r.Runs {
		if run.Name == "outage" {
			runs[i] = true
		}
	}
	if len(runs) == 0 {
		for i, run := range r.Runs {
			runs[i] = run.Storm
		}
	}
	return runs
}

func (tl *timeline) height() int {
	return tlHeader + len(tl.r.Runs)*tlRowH + tlFooter
}

func (tl *timeline) draw() {
	h := float64(tl.height())
	tl.c = chart.New(tlWidth, h, chart.Attr{Name: "font-size", Value: "11"})
	tl.header()
	for i := range tl.r.Runs {
		tl.row(i)
	}
	tl.c.Text(tlWidth/2, h-6, "seconds since the run began", chart.Style{Anchor: "middle", Fill: "#444"})
}

func (tl *timeline) header() {
	s := tl.r.Settings
	tl.c.Text(10, 20, "apollo spike: riders outside the storm's hotspot, run by run", chart.Style{FontSize: 15, Bold: true})
	sub := fmt.Sprintf("storm %s–%s s at %g× the base rate over a %.0f m hotspot", fmtSec(tl.stormFrom), fmtSec(tl.stormTo), s.SpikeMultiplier, tl.r.Hotspot.RadiusM)
	if tl.outage != nil {
		sub += fmt.Sprintf("; Redis paused %s–%s s", fmtSec(tl.outage.From), fmtSec(tl.outage.To))
	}
	if s.BucketSeconds > 0 {
		sub += fmt.Sprintf("; Spampede buckets of %d s (faint lines)", s.BucketSeconds)
	}
	tl.c.Text(10, 37, sub, chart.Style{Fill: "#555"})
	tl.legend(54)
	titles := []string{"outside: bookings that got a driver (%)", "outside: booking p99 latency (ms, log)", "inside: bookings per second"}
	for c, t := range titles {
		tl.c.Text(float64(c*tlColW+tlPlotL), tlHeader-8, t, chart.Style{Fill: "#333", Bold: true})
	}
}

// legend is two lines, outside then inside, mirroring the columns below;
// it names a series or window only if the chart has one, so that nothing
// in it has to be looked for in vain.
func (tl *timeline) legend(y float64) {
	type item struct {
		color, dash, label string
		box                bool
	}
	outside := []item{{tlColorSuccess, "", "outside: got a driver", false}, {tlColorP99, "", "outside: booking p99", false}}
	if tl.base != nil {
		outside = append(outside, item{tlColorBaseline, "", "the baseline run, for reference", false})
	}
	outside = append(outside, item{tlStormFill, "", "storm", true})
	inside := []item{{tlColorInside, "", "inside: requested", false}, {tlColorRejected, "", "inside: rejected (429)", false}}
	if tl.anyRun(func(s Second) bool { return s.Inside.WouldReject > 0 }) {
		inside = append(inside, item{tlColorWould, "4 2", "inside: would reject (shadow)", false})
	}
	if tl.anyRun(func(s Second) bool { return s.Inside.FailOpen > 0 }) {
		inside = append(inside, item{tlColorFailOpen, "2 2", "inside: admitted failing open", false})
	}
	if tl.outage != nil {
		inside = append(inside, item{tlOutageFill, "", "Redis paused", true})
	}
	for n, line := range [][]item{outside, inside} {
		x, ly := 10.0, y+16*float64(n)
		for _, it := range line {
			if it.box {
				tl.c.Rect(x, ly-5, 18, 10, chart.Style{Fill: it.color})
			} else {
				tl.c.Line(x, ly, x+18, ly, chart.Style{Stroke: it.color, StrokeWidth: 2.5, Dash: it.dash})
			}
			tl.c.Text(x+22, ly+4, it.label, chart.Style{})
			x += float64(40 + 6*len(it.label))
		}
	}
}

func (tl *timeline) anyRun(f func(Second) bool) bool {
	for _, run := range tl.r.Runs {
		if runHas(run, f) {
			return true
		}
	}
	return false
}

func (tl *timeline) row(i int) {
	run := tl.r.Runs[i]
	top := float64(tlHeader + i*tlRowH)
	tl.c.TextSpans(10, top+14, chart.Style{},
		chart.Span{Text: run.Name, Style: chart.Style{FontSize: 13, Bold: true}},
		chart.Span{Text: runCaption(tl.r, run), Style: chart.Style{Fill: "#555"}, DX: 8})
	panels := make([]chart.Panel, 3)
	for c := range panels {
		panels[c] = chart.Panel{X: float64(c*tlColW + tlPlotL), Y: top + tlRowTitle, W: tlColW - tlPlotL - tlPlotR, H: tlPlotH, X1: tl.dur}
		tl.backdrop(panels[c], run, i, c == 0)
	}
	tl.axis(panels[0], tl.success)
	tl.axis(panels[1], tl.p99)
	tl.axis(panels[2], tl.inside)
	if tl.base != nil && tl.base != &tl.r.Runs[i] {
		tl.series(panels[0], tl.success, tl.base.Seconds, tlOutsideSuccess, tlColorBaseline, "", 2)
		tl.series(panels[1], tl.p99, tl.base.Seconds, tlOutsideP99, tlColorBaseline, "", 2)
	}
	tl.series(panels[0], tl.success, run.Seconds, tlOutsideSuccess, tlColorSuccess, "", 1.8)
	tl.series(panels[1], tl.p99, run.Seconds, tlOutsideP99, tlColorP99, "", 1.8)
	tl.series(panels[2], tl.inside, run.Seconds, tlInsideRequested, tlColorInside, "", 1.5)
	tl.series(panels[2], tl.inside, run.Seconds, tlInsideRejected, tlColorRejected, "", 1.8)
	// Drawn only where they happen, so an "on" run is not crossed by a
	// flat line of zeros for a mode it is not in.
	if runHas(run, func(s Second) bool { return s.Inside.WouldReject > 0 }) {
		tl.series(panels[2], tl.inside, run.Seconds, tlInsideWould, tlColorWould, "4 2", 1.8)
	}
	if runHas(run, func(s Second) bool { return s.Inside.FailOpen > 0 }) {
		tl.series(panels[2], tl.inside, run.Seconds, tlInsideFailOpen, tlColorFailOpen, "2 2", 1.8)
	}
}

func runHas(run Run, f func(Second) bool) bool {
	for _, s := range run.Seconds {
		if f(s) {
			return true
		}
	}
	return false
}

// runCaption puts the run's verdict next to its name, so the numbers the
// lines suggest are there to read.
func runCaption(r *Report, run Run) string {
	parts := []string{"Spampede " + orNone(run.Mode)}
	if !run.Storm {
		parts = append(parts, "no storm")
	}
	base := baselineRun(r)
	for _, l := range r.Summary {
		if l.Run != run.Name {
			continue
		}
		success, p99 := fmtPct(l.OutsideSuccess), chart.Ms(roundMs(l.OutsideP99))
		if base != nil && base.Name != run.Name {
			success += " (" + fmtChange(l.SuccessVsBase) + ")"
			p99 += " (" + fmtChange(l.P99VsBase) + ") vs baseline"
		}
		parts = append(parts, "outside success "+success, "p99 "+p99)
	}
	return strings.Join(parts, " · ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func roundMs(v float64) float64 {
	if v >= 10 {
		return math.Round(v)
	}
	return math.Round(v*10) / 10
}

func fmtPct(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) }

func fmtChange(v float64) string { return fmt.Sprintf("%+.1f %%", 100*v) }

func fmtSec(v float64) string { return fmt.Sprintf("%g", math.Round(v*10)/10) }

// backdrop shades the windows before anything is drawn over them, and
// labels them low in the panel, where success lines rarely go. The
// baseline had no storm, so its window is only outlined: it is the span its
// totals are compared over.
func (tl *timeline) backdrop(p chart.Panel, run Run, i int, labels bool) {
	if tl.stormTo > tl.stormFrom {
		if run.Storm {
			tl.c.Shade(p, tl.stormFrom, tl.stormTo, chart.Style{Fill: tlStormFill})
			tl.bucketLines(p, run)
			if labels {
				tl.c.Text(p.PX(tl.stormFrom)+3, p.Y+p.H-4, "storm", chart.Style{Fill: "#3182bd", FontSize: 10})
			}
		} else {
			tl.c.Shade(p, tl.stormFrom, tl.stormTo, chart.Style{Fill: "none", Stroke: "#9ecae1", Dash: "3 3"})
		}
	}
	if o := tl.outage; o != nil && tl.outageRuns[i] {
		tl.c.Shade(p, o.From, o.To, chart.Style{Fill: tlOutageFill, Opacity: 0.8})
		if labels {
			tl.c.Text(p.PX(o.From)+3, p.Y+p.H-15, "Redis paused", chart.Style{Fill: "#c0392b", FontSize: 10})
		}
	}
	tl.c.Frame(p, "#999")
	tl.c.XTicks(p, func(t float64) string { return fmt.Sprintf("%gs", t) }, chart.TickStyle{
		Line: chart.Style{Stroke: "#999"}, Mark: 3,
		Label: chart.Style{Anchor: "middle", Fill: "#444", FontSize: 10}, DY: 14,
	})
}

// bucketLines marks where Spampede's buckets turn over within the storm:
// buckets follow the wall clock, so they are placed from the run's start
// time (or from the storm's start, for a report without one).
func (tl *timeline) bucketLines(p chart.Panel, run Run) {
	step := float64(tl.r.Settings.BucketSeconds)
	if step <= 0 || step/tl.dur*p.W < 4 {
		return
	}
	first := tl.stormFrom + step
	if run.StartUnixMs > 0 {
		// The first boundary after the run began, then on past the storm's start.
		first = math.Mod(step-math.Mod(float64(run.StartUnixMs)/1000, step), step)
		for first <= tl.stormFrom {
			first += step
		}
	}
	for t := first; t < tl.stormTo; t += step {
		tl.c.Line(p.PX(t), p.Y, p.PX(t), p.Y+p.H, chart.Style{Stroke: "#6baed6", StrokeWidth: 0.6, Opacity: 0.6})
	}
}

func (tl *timeline) axis(p chart.Panel, a chart.Axis) {
	tl.c.YGrid(p, a, chart.TickStyle{
		Line:  chart.Style{Stroke: "#000", Opacity: 0.08},
		Label: chart.Style{Anchor: "end", Fill: "#444", FontSize: 10}, DX: -4, DY: 3.5,
	})
}

func (tl *timeline) series(p chart.Panel, a chart.Axis, secs []Second, m tlMetric, color, dash string, width float64) {
	tl.c.Plot(p, a, tlSeries(secs, m, color, dash, width))
}
