package spike

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
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

// tlPoint is one plotted second: t is the second's start, v its value.
type tlPoint struct{ t, v float64 }

// tlMetric reads one series from a second; ok is false when the second has
// nothing to say (no requests), which breaks the line instead of drawing 0.
type tlMetric func(s Second) (v float64, ok bool)

func tlOutsideSuccess(s Second) (float64, bool) {
	return 100 * s.Outside.Success(), s.Outside.Requested > 0
}

func tlOutsideP99(s Second) (float64, bool) {
	return s.Outside.LatencyP99, s.Outside.Requested > 0
}

func tlInsideRequested(s Second) (float64, bool) { return float64(s.Inside.Requested), true }
func tlInsideRejected(s Second) (float64, bool)  { return float64(s.Inside.Rejected), true }
func tlInsideWould(s Second) (float64, bool)     { return float64(s.Inside.WouldReject), true }
func tlInsideFailOpen(s Second) (float64, bool)  { return float64(s.Inside.FailOpen), true }

// tlSegments splits a series into runs of consecutive seconds with a
// value, so gaps in the data show as gaps in the line.
func tlSegments(secs []Second, m tlMetric) [][]tlPoint {
	var segs [][]tlPoint
	var cur []tlPoint
	prev := math.MinInt
	for _, s := range secs {
		v, ok := m(s)
		ok = ok && isFinite(v)
		if !ok || s.T != prev+1 {
			if len(cur) > 0 {
				segs = append(segs, cur)
			}
			cur = nil
		}
		prev = s.T
		if ok {
			cur = append(cur, tlPoint{float64(s.T), v})
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// tlPanel is one plot area, in pixels, over [0, dur) seconds.
type tlPanel struct {
	x, y, w, h float64
	dur        float64
}

func (p tlPanel) px(t float64) float64 { return p.x + t/p.dur*p.w }

// tlAxis maps a value to a y pixel in its panel.
type tlAxis struct {
	lo, hi float64
	log    bool
	ticks  []float64
	label  func(v float64) string
}

func (a tlAxis) frac(v float64) float64 {
	if a.log {
		v = math.Max(v, a.lo)
		return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return (v - a.lo) / (a.hi - a.lo)
}

func (a tlAxis) py(p tlPanel, v float64) float64 {
	f := math.Min(math.Max(a.frac(v), 0), 1)
	return p.y + (1-f)*p.h
}

// timeline holds what every row shares: the x range, the shared y axes,
// the baseline to draw behind the others, and the windows.
type timeline struct {
	r          *Report
	dur        float64
	base       *Run
	success    tlAxis
	p99        tlAxis
	inside     tlAxis
	stormFrom  float64
	stormTo    float64
	outage     *Window // nil when Redis was never paused
	outageRuns map[int]bool
	b          strings.Builder
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
	_, err := io.WriteString(w, tl.b.String())
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
			if v, ok := tlOutsideP99(s); ok && isFinite(v) && v > 0 {
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
	if o := r.Settings.Outage; o != nil && isFinite(o.From) && isFinite(o.To) && o.To > o.From {
		tl.outage = o
	}
	tl.success = tlAxis{lo: 0, hi: 100, ticks: []float64{0, 50, 100}, label: func(v float64) string { return fmt.Sprintf("%.0f%%", v) }}
	tl.p99 = latencyAxis(latencies)
	top := niceCeil(insideMax)
	tl.inside = tlAxis{lo: 0, hi: top, ticks: []float64{0, top / 2, top}, label: func(v float64) string { return fmt.Sprintf("%g/s", v) }}
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

// latencyAxis is logarithmic by decades, because the point is the jump from
// a few milliseconds to seconds, which a linear axis flattens.
func latencyAxis(ms []float64) tlAxis {
	lo, hi := 1.0, 10.0
	if len(ms) > 0 {
		lo, hi = ms[0], ms[0]
		for _, v := range ms {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		lo = math.Pow(10, math.Floor(math.Log10(lo)))
		hi = math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
	}
	var ticks []float64
	for v := lo; v <= hi*1.0001; v *= 10 {
		ticks = append(ticks, v)
	}
	return tlAxis{lo: lo, hi: hi, log: true, ticks: ticks, label: fmtMs}
}

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%g s", v/1000)
	}
	return fmt.Sprintf("%g ms", v)
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten, for tick labels a
// reader can take in at once.
func niceCeil(v float64) float64 {
	if v <= 0 || !isFinite(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func (tl *timeline) height() int {
	return tlHeader + len(tl.r.Runs)*tlRowH + tlFooter
}

func (tl *timeline) draw() {
	h := tl.height()
	fmt.Fprintf(&tl.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, tlWidth, h, tlWidth, h)
	fmt.Fprintf(&tl.b, `<rect width="100%%" height="100%%" fill="white"/>`)
	tl.header()
	for i := range tl.r.Runs {
		tl.row(i)
	}
	fmt.Fprintf(&tl.b, `<text x="%d" y="%d" text-anchor="middle" fill="#444">seconds since the run began</text>`, tlWidth/2, h-6)
	tl.b.WriteString(`</svg>`)
}

func (tl *timeline) header() {
	s := tl.r.Settings
	fmt.Fprintf(&tl.b, `<text x="10" y="20" font-size="15" font-weight="bold">apollo spike: riders outside the storm's hotspot, run by run</text>`)
	sub := fmt.Sprintf("storm %s–%s s at %g× the base rate over a %.0f m hotspot", fmtSec(tl.stormFrom), fmtSec(tl.stormTo), s.SpikeMultiplier, tl.r.Hotspot.RadiusM)
	if tl.outage != nil {
		sub += fmt.Sprintf("; Redis paused %s–%s s", fmtSec(tl.outage.From), fmtSec(tl.outage.To))
	}
	if s.BucketSeconds > 0 {
		sub += fmt.Sprintf("; Spampede buckets of %d s (faint lines)", s.BucketSeconds)
	}
	fmt.Fprintf(&tl.b, `<text x="10" y="37" fill="#555">%s</text>`, html.EscapeString(sub))
	tl.legend(54)
	titles := []string{"outside: bookings that got a driver (%)", "outside: booking p99 latency (ms, log)", "inside: bookings per second"}
	for c, t := range titles {
		fmt.Fprintf(&tl.b, `<text x="%d" y="%d" font-weight="bold" fill="#333">%s</text>`, c*tlColW+tlPlotL, tlHeader-8, html.EscapeString(t))
	}
}

// legend is two lines, outside then inside, mirroring the columns below;
// it names a series or window only if the chart has one, so that nothing
// in it has to be looked for in vain.
func (tl *timeline) legend(y int) {
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
		x, ly := 10, y+16*n
		for _, it := range line {
			if it.box {
				fmt.Fprintf(&tl.b, `<rect x="%d" y="%d" width="18" height="10" fill="%s"/>`, x, ly-5, it.color)
			} else {
				fmt.Fprintf(&tl.b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`, x, x+18, ly, ly, it.color, dashAttr(it.dash))
			}
			fmt.Fprintf(&tl.b, `<text x="%d" y="%d">%s</text>`, x+22, ly+4, html.EscapeString(it.label))
			x += 40 + 6*len(it.label)
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

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

func (tl *timeline) row(i int) {
	run := tl.r.Runs[i]
	top := float64(tlHeader + i*tlRowH)
	fmt.Fprintf(&tl.b, `<text x="10" y="%.0f"><tspan font-weight="bold" font-size="13">%s</tspan><tspan fill="#555" dx="8">%s</tspan></text>`,
		top+14, html.EscapeString(run.Name), html.EscapeString(runCaption(tl.r, run)))
	panels := make([]tlPanel, 3)
	for c := range panels {
		panels[c] = tlPanel{x: float64(c*tlColW + tlPlotL), y: top + tlRowTitle, w: tlColW - tlPlotL - tlPlotR, h: tlPlotH, dur: tl.dur}
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
		success, p99 := fmtPct(l.OutsideSuccess), fmtMs(roundMs(l.OutsideP99))
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
func (tl *timeline) backdrop(p tlPanel, run Run, i int, labels bool) {
	from, to := p.px(tl.stormFrom), p.px(tl.stormTo)
	if to > from {
		if run.Storm {
			fmt.Fprintf(&tl.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, from, p.y, to-from, p.h, tlStormFill)
			tl.bucketLines(p, run)
			if labels {
				fmt.Fprintf(&tl.b, `<text x="%.1f" y="%.1f" fill="#3182bd" font-size="10">storm</text>`, from+3, p.y+p.h-4)
			}
		} else {
			fmt.Fprintf(&tl.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#9ecae1" stroke-dasharray="3 3"/>`, from, p.y, to-from, p.h)
		}
	}
	if o := tl.outage; o != nil && tl.outageRuns[i] {
		from, to := p.px(o.From), p.px(o.To)
		fmt.Fprintf(&tl.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="0.8"/>`, from, p.y, to-from, p.h, tlOutageFill)
		if labels {
			fmt.Fprintf(&tl.b, `<text x="%.1f" y="%.1f" fill="#c0392b" font-size="10">Redis paused</text>`, from+3, p.y+p.h-15)
		}
	}
	fmt.Fprintf(&tl.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`, p.x, p.y, p.w, p.h)
	tl.xTicks(p)
}

// bucketLines marks where Spampede's buckets turn over within the storm:
// buckets follow the wall clock, so they are placed from the run's start
// time (or from the storm's start, for a report without one).
func (tl *timeline) bucketLines(p tlPanel, run Run) {
	step := float64(tl.r.Settings.BucketSeconds)
	if step <= 0 || step/p.dur*p.w < 4 {
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
		fmt.Fprintf(&tl.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#6baed6" stroke-width="0.6" opacity="0.6"/>`, p.px(t), p.px(t), p.y, p.y+p.h)
	}
}

func (tl *timeline) xTicks(p tlPanel) {
	step := tickStepSeconds(p.dur)
	for t := 0.0; t <= p.dur+1e-9; t += step {
		x := p.px(t)
		fmt.Fprintf(&tl.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999"/>`, x, x, p.y+p.h, p.y+p.h+3)
		fmt.Fprintf(&tl.b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#444" font-size="10">%gs</text>`, x, p.y+p.h+14, t)
	}
}

// tickStepSeconds gives about five labelled ticks whatever the duration.
func tickStepSeconds(dur float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600} {
		if dur/s <= 6 {
			return s
		}
	}
	return 3600 * math.Ceil(dur/3600/6)
}

func (tl *timeline) axis(p tlPanel, a tlAxis) {
	for _, v := range a.ticks {
		y := a.py(p, v)
		fmt.Fprintf(&tl.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#000" opacity="0.08"/>`, p.x, p.x+p.w, y, y)
		fmt.Fprintf(&tl.b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#444" font-size="10">%s</text>`, p.x-4, y+3.5, html.EscapeString(a.label(v)))
	}
}

// series draws each unbroken stretch of a metric as a line, and a lone
// second as a dot, since a one-point polyline is invisible.
func (tl *timeline) series(p tlPanel, a tlAxis, secs []Second, m tlMetric, color, dash string, width float64) {
	for _, seg := range tlSegments(secs, m) {
		if len(seg) == 1 {
			fmt.Fprintf(&tl.b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`, p.px(seg[0].t+0.5), a.py(p, seg[0].v), width+0.7, color)
			continue
		}
		pts := make([]string, len(seg))
		for k, pt := range seg {
			pts[k] = fmt.Sprintf("%.1f,%.1f", p.px(pt.t+0.5), a.py(p, pt.v))
		}
		fmt.Fprintf(&tl.b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"%s points="%s"/>`, color, width, dashAttr(dash), strings.Join(pts, " "))
	}
}
