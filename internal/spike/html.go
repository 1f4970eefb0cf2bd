package spike

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/apollo-platform/apollo/internal/chart"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/sim"
)

// WriteHTML writes the drill as one self-contained page, with no scripts
// or external assets, so it can be attached to a postmortem as is.
func WriteHTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("spike: page of a nil report")
	}
	var svg strings.Builder
	if err := TimelineSVG(&svg, r); err != nil {
		return err
	}
	page := htmlPage{
		Hotspot:  fmt.Sprintf("a %.0f m circle around %.5f, %.5f", r.Hotspot.RadiusM, r.Hotspot.Lat, r.Hotspot.Lng),
		Settings: htmlSettings(r),
		Summary:  htmlSummary(r),
		Timeline: template.HTML(svg.String()), // built from escaped text only
	}
	sc := newCellScale(r)
	for _, run := range r.Runs {
		page.Runs = append(page.Runs, htmlRunSection(r, run, sc))
	}
	return htmlPageTemplate.Execute(w, page)
}

type htmlPage struct {
	Hotspot  string
	Settings [][2]string
	Summary  []htmlSummaryRow
	Timeline template.HTML
	Runs     []htmlRun
}

type htmlSummaryRow struct {
	Run, Success, SuccessVs, P99, P99Vs, AllocP99 string
	SettledP99, SettledP99Vs                      string
	Rejected, Would                               int
	Within, SettledWithin                         bool
}

type htmlRun struct {
	Name, Caption, FirstTrip string
	Totals                   []htmlCountsRow
	Errors                   []string
	Map                      template.HTML
	Seconds                  []htmlSecondRow
}

type htmlCountsRow struct {
	Where string
	C     Counts
}

type htmlSecondRow struct {
	T                 int
	In, Out           Counts
	OutSuccess, Redis string
}

func htmlSettings(r *Report) [][2]string {
	s := r.Settings
	rows := [][2]string{
		{"seed", fmt.Sprint(s.Seed)},
		{"rounds", fmt.Sprint(max(s.Rounds, 1))},
		{"duration", s.Duration.String()},
		{"storm", fmt.Sprintf("%s–%s s, %g× the base rate in the hotspot", fmtSec(s.StormStart.Seconds()), fmtSec(s.StormEnd.Seconds()), s.SpikeMultiplier)},
		{"base rate", fmt.Sprintf("%g bookings/s", s.BaseRate)},
		{"drivers", fmt.Sprint(s.Drivers)},
		{"allocation", fmt.Sprintf("timeout %s, cost %s, %d slots, %d workers", s.AllocationTimeout, s.AllocCost, s.AllocSlots, s.Workers)},
		{"Spampede", fmt.Sprintf("%d-bit cells, %d s buckets, threshold %d, hold-down %d s", s.CellBits, s.BucketSeconds, s.Threshold, s.HoldDownSeconds)},
		{"cluster", fmt.Sprintf("%d primaries × %d replicas, fresh per run", s.Primaries, s.Replicas)},
	}
	if s.Outage != nil {
		rows = append(rows, [2]string{"Redis outage", fmt.Sprintf("paused %s–%s s", fmtSec(s.Outage.From), fmtSec(s.Outage.To))})
	}
	return rows
}

func htmlSummary(r *Report) []htmlSummaryRow {
	base := baselineRun(r)
	var rows []htmlSummaryRow
	for _, l := range r.Summary {
		row := htmlSummaryRow{
			Run: l.Run, Success: fmtPct(l.OutsideSuccess), SuccessVs: fmtChange(l.SuccessVsBase),
			P99: chart.Ms(roundMs(l.OutsideP99)), P99Vs: fmtChange(l.P99VsBase), AllocP99: chart.Ms(roundMs(l.OutsideAllocP99)),
			Rejected: l.InsideRejected, Would: l.InsideWould, Within: l.Within5Pct,
			SettledP99: chart.Ms(roundMs(l.SettledP99)), SettledP99Vs: fmtChange(l.SettledP99VsBase), SettledWithin: l.SettledWithin5Pct,
		}
		// Without a baseline (the outage variant) the summary compares the
		// first run with itself, which says nothing.
		if base == nil || isBaselineLine(l) {
			row.SuccessVs, row.P99Vs, row.SettledP99Vs = "—", "—", "—"
		}
		rows = append(rows, row)
	}
	return rows
}

func htmlRunSection(r *Report, run Run, sc cellScale) htmlRun {
	h := htmlRun{
		Name:    run.Name,
		Caption: runCaption(r, run),
		Totals:  []htmlCountsRow{{"inside the hotspot", run.Inside}, {"outside", run.Outside}},
		Errors:  run.Errors,
		Map:     template.HTML(cellMapSVG(run, r.Hotspot, sc)), // built from escaped text only
	}
	switch {
	case !run.Storm: // nothing to wait for
	case run.FirstTripAfter < 0:
		h.FirstTrip = "no storm booking in the hotspot led to a trip"
	default:
		h.FirstTrip = fmt.Sprintf("the first trip from a storm booking in the hotspot started %s s into the storm", fmtSec(run.FirstTripAfter.Seconds()))
	}
	for _, s := range run.Seconds {
		row := htmlSecondRow{T: s.T, In: s.Inside, Out: s.Outside, OutSuccess: "–", Redis: fmt.Sprintf("%.0f", s.RedisCmds)}
		if s.Outside.Requested > 0 {
			row.OutSuccess = fmtPct(s.Outside.Success())
		}
		h.Seconds = append(h.Seconds, row)
	}
	return h
}

// cellScale is shared by every run's map, so that the same red means the
// same number of stranded riders whichever run it is in.
type cellScale struct{ unallocated, trips int }

func newCellScale(r *Report) cellScale {
	var sc cellScale
	for _, run := range r.Runs {
		for _, c := range run.Grid {
			sc.unallocated = max(sc.unallocated, c.Unallocated)
			sc.trips = max(sc.trips, c.Trips)
		}
	}
	return sc
}

// unallocColor runs from white (none) to red (the most of any cell in any
// run).
func unallocColor(n, most int) string {
	f := 0.0
	if most > 0 {
		f = math.Min(math.Max(float64(n)/float64(most), 0), 1)
	}
	red := 255 - int(math.Round(f*40))
	gb := 255 - int(math.Round(f*210))
	return fmt.Sprintf("#%02x%02x%02x", red, gb, gb)
}

const (
	mapSide = 560.0 // the longer side of the cell grid, px
	mapPad  = 12.0
)

// cellBoxes is what a run's map must show: its cells, the hotspot's and
// the hotspot's circle.
func cellBoxes(run Run, h Hotspot) []chart.Box {
	var boxes []chart.Box
	for _, c := range h.Cells {
		boxes = append(boxes, chartBox(c))
	}
	for _, c := range run.Grid {
		boxes = append(boxes, chartBox(c.Box))
	}
	if h.RadiusM > 0 {
		dLat, dLng := hotspotDegrees(h)
		boxes = append(boxes, chart.Box{MinLat: h.Lat - dLat, MaxLat: h.Lat + dLat, MinLng: h.Lng - dLng, MaxLng: h.Lng + dLng})
	}
	return boxes
}

func chartBox(b Box) chart.Box {
	return chart.Box{MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng}
}

func hotspotDegrees(h Hotspot) (dLat, dLng float64) {
	ne := sim.Offset(driver.Location{Lat: h.Lat, Lng: h.Lng}, h.RadiusM, h.RadiusM)
	return ne.Lat - h.Lat, ne.Lng - h.Lng
}

// cellMapSVG draws a run's cells where they lie: colour for unallocated
// bookings, a dot sized by trips started, the numbers written in, and the
// hotspot with its own cells outlined on top.
func cellMapSVG(run Run, h Hotspot, sc cellScale) string {
	p, ok := chart.FitBoxes(cellBoxes(run, h), mapSide, mapPad)
	if len(run.Grid) == 0 || !ok {
		return ""
	}
	// Whole pixels for the picture's size, as the page lays it out.
	width := math.RoundToEven(math.Max(p.Width(), 460))
	c := chart.New(width, math.RoundToEven(p.Height()+58), chart.Attr{Name: "font-size", Value: "11"})
	fs := cellFontSize(p, run.Grid, sc)
	for _, cell := range run.Grid {
		drawCell(c, p, cell, sc, fs)
	}
	drawHotspot(c, p, h)
	drawCellLegend(c, p.Height()+14, h, sc)
	c.Text(width-mapPad, math.RoundToEven(p.Height()+24), "N ↑", chart.Style{Anchor: "end", FontSize: 13, Bold: true})
	return c.String()
}

func drawCell(c *chart.SVG, p chart.Proj, cell CellStat, sc cellScale, fs float64) {
	x0, x1, y0, y1 := p.X(cell.MinLng), p.X(cell.MaxLng), p.Y(cell.MaxLat), p.Y(cell.MinLat)
	w, h := x1-x0, y1-y0
	c.Group(fmt.Sprintf("cell %s: %d requested, %d allocated, %d unallocated, %d rejected, %d trips started",
		cell.Cell, cell.Requested, cell.Allocated, cell.Unallocated, cell.Rejected, cell.Trips))
	c.Rect(x0, y0, w, h, chart.Style{Fill: unallocColor(cell.Unallocated, sc.unallocated), Stroke: "#bbb"})
	if sc.trips > 0 && cell.Trips > 0 {
		most := math.Min(w, h) * 0.2
		r := math.Max(most*math.Sqrt(float64(cell.Trips)/float64(sc.trips)), 1.5)
		c.Circle(x1-most-3, y1-most-3, r, chart.Style{Fill: "#31a354", Stroke: "white"})
	}
	drawCellNumbers(c, x0, y0, cell, sc, fs)
	c.End()
}

// cellFontSize is one size for the whole map, the largest at which the
// widest possible count fits the smallest cell; 0 when none is legible.
func cellFontSize(p chart.Proj, grid []CellStat, sc cellScale) float64 {
	w, h := math.Inf(1), math.Inf(1)
	for _, c := range grid {
		w = math.Min(w, p.X(c.MaxLng)-p.X(c.MinLng))
		h = math.Min(h, p.Y(c.MinLat)-p.Y(c.MaxLat))
	}
	widest := float64(len(fmt.Sprintf("%d unallocated", max(sc.unallocated, sc.trips))))
	fs := math.Min(math.Min((w-8)/(0.62*widest), h/4.4), 12)
	if fs < 7 {
		return 0
	}
	return fs
}

// drawCellNumbers writes a cell's non-zero counts: zeros everywhere would
// hide the cells that matter.
func drawCellNumbers(c *chart.SVG, x0, y0 float64, cell CellStat, sc cellScale, fs float64) {
	if fs == 0 {
		return
	}
	size := math.Round(fs*10) / 10 // a tenth of a pixel is as fine as a size need be
	ink := "#222"
	if sc.unallocated > 0 && float64(cell.Unallocated) > 0.55*float64(sc.unallocated) {
		ink = "white"
	}
	i := 0
	for _, n := range []struct {
		v    int
		unit string
	}{{cell.Unallocated, "unallocated"}, {cell.Rejected, "rejected"}, {cell.Trips, "trips"}} {
		if n.v != 0 {
			i++
			c.Text(x0+4, y0+fs*1.25*float64(i), fmt.Sprintf("%d %s", n.v, n.unit), chart.Style{Fill: ink, FontSize: size})
		}
	}
}

func drawHotspot(c *chart.SVG, p chart.Proj, h Hotspot) {
	outline := chart.Style{Fill: "none", Stroke: "#111", StrokeWidth: 2}
	for _, cell := range h.Cells {
		c.Rect(p.X(cell.MinLng), p.Y(cell.MaxLat), p.X(cell.MaxLng)-p.X(cell.MinLng), p.Y(cell.MinLat)-p.Y(cell.MaxLat), outline)
	}
	if h.RadiusM <= 0 {
		return
	}
	dLat, dLng := hotspotDegrees(h)
	c.Ellipse(p.X(h.Lng), p.Y(h.Lat), p.DX(dLng), p.DY(dLat), chart.Style{Fill: "none", Stroke: "#08519c", StrokeWidth: 2, Dash: "6 3"})
}

func drawCellLegend(c *chart.SVG, y float64, h Hotspot, sc cellScale) {
	c.Text(mapPad, y+9, "unallocated bookings: 0", chart.Style{})
	for i := range 5 {
		c.Rect(mapPad+140+float64(i)*18, y, 18, 12, chart.Style{Fill: unallocColor(i*sc.unallocated/4, sc.unallocated), Stroke: "#bbb"})
	}
	c.Text(mapPad+236, y+9, fmt.Sprintf("%d (most of any cell, any run)", sc.unallocated), chart.Style{})
	y += 24
	c.Circle(mapPad+5, y, 5, chart.Style{Fill: "#31a354"})
	c.Text(mapPad+14, y+4, "trips started (area)", chart.Style{})
	c.Rect(mapPad+140, y-5, 16, 10, chart.Style{Fill: "none", Stroke: "#111", StrokeWidth: 2})
	c.Text(mapPad+160, y+4, "hotspot's cells", chart.Style{})
	c.Ellipse(mapPad+270, y, 9, 6, chart.Style{Fill: "none", Stroke: "#08519c", StrokeWidth: 2, Dash: "4 2"})
	c.Text(mapPad+284, y+4, fmt.Sprintf("hotspot, %.0f m", h.RadiusM), chart.Style{})
}

var htmlPageTemplate = template.Must(template.New("spike").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>apollo spike</title>
<style>
body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:14px}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
table.kv td{text-align:left}
.yes{color:#2c7a2c;font-weight:bold}.no{color:#b22;font-weight:bold}
.seconds{font-size:12px;overflow-x:auto}.seconds table{font-size:12px}
.err{color:#b22;font-family:monospace}
svg{max-width:100%;height:auto}
</style></head><body>
<h1>apollo spike</h1>
<p>A rainstorm floods one hotspot, {{.Hotspot}}, with bookings no driver can take. Each run is a fresh
cluster; the question is what that does to riders <em>outside</em> the hotspot with Spampede off, in
shadow, and on, compared with the baseline: the same city without the storm, with the Spampede rule on
(nothing trips, but it reads its counters for every booking, as in shadow and on). A
<code>baseline-no-filter</code> run, if present, is that city without the rule: what the filter itself
costs every booking.</p>
<h2>Settings</h2>
<table class="kv">{{range .Settings}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
<h2>Summary</h2>
<p>Outside the hotspot, over the storm window (the same window for the baseline); "settled" is the
storm once its first allocation timeout has passed.</p>
<table>
<tr><th>run</th><th>outside success</th><th>vs baseline</th><th>outside p99</th><th>vs baseline</th><th>outside alloc p99</th><th>inside rejected</th><th>inside would-reject</th><th>within 5%?</th><th>settled p99</th><th>vs baseline</th><th>settled within 5%?</th></tr>
{{range .Summary}}<tr><td>{{.Run}}</td><td>{{.Success}}</td><td>{{.SuccessVs}}</td><td>{{.P99}}</td><td>{{.P99Vs}}</td><td>{{.AllocP99}}</td><td>{{.Rejected}}</td><td>{{.Would}}</td><td>{{if .Within}}<span class="yes">yes</span>{{else}}<span class="no">no</span>{{end}}</td><td>{{.SettledP99}}</td><td>{{.SettledP99Vs}}</td><td>{{if .SettledWithin}}<span class="yes">yes</span>{{else}}<span class="no">no</span>{{end}}</td></tr>
{{end}}</table>
<h2>Second by second</h2>
{{.Timeline}}
{{range .Runs}}
<h2>Run: {{.Name}}</h2>
<p>{{.Caption}}{{if .FirstTrip}}; {{.FirstTrip}}{{end}}.</p>
<table>
<tr><th>storm window</th><th>requested</th><th>admitted</th><th>rejected</th><th>would reject</th><th>fail-open</th><th>failed (503)</th><th>allocated</th><th>unallocated</th><th>pending</th><th>latency p50 / p99</th><th>alloc p50 / p99</th></tr>
{{range .Totals}}<tr><td>{{.Where}}</td><td>{{.C.Requested}}</td><td>{{.C.Admitted}}</td><td>{{.C.Rejected}}</td><td>{{.C.WouldReject}}</td><td>{{.C.FailOpen}}</td><td>{{.C.Failed}}</td><td>{{.C.Allocated}}</td><td>{{.C.Unallocated}}</td><td>{{.C.Pending}}</td><td>{{printf "%.1f / %.1f ms" .C.LatencyP50 .C.LatencyP99}}</td><td>{{printf "%.0f / %.0f ms" .C.AllocP50 .C.AllocP99}}</td></tr>
{{end}}</table>
{{with .Errors}}<p>Unexpected errors (a sample):</p><ul>{{range .}}<li class="err">{{.}}</li>{{end}}</ul>{{end}}
{{if .Map}}<p>Cells around the hotspot, north up: colour is bookings left without a driver, the dot is trips drivers started there; counts of zero are left out, and hovering a cell shows all of them.</p>
{{.Map}}{{else}}<p>No cells recorded for this run.</p>{{end}}
<details class="seconds"><summary>{{.Name}}, second by second</summary>
<table>
<tr><th></th><th colspan="7">inside the hotspot</th><th colspan="7">outside</th><th></th></tr>
<tr><th>t (s)</th><th>req</th><th>rejected</th><th>would</th><th>fail-open</th><th>503</th><th>alloc</th><th>unalloc</th><th>req</th><th>alloc</th><th>success</th><th>503</th><th>p50 ms</th><th>p99 ms</th><th>alloc p99 ms</th><th>redis cmds/s</th></tr>
{{range .Seconds}}<tr><td>{{.T}}</td><td>{{.In.Requested}}</td><td>{{.In.Rejected}}</td><td>{{.In.WouldReject}}</td><td>{{.In.FailOpen}}</td><td>{{.In.Failed}}</td><td>{{.In.Allocated}}</td><td>{{.In.Unallocated}}</td><td>{{.Out.Requested}}</td><td>{{.Out.Allocated}}</td><td>{{.OutSuccess}}</td><td>{{.Out.Failed}}</td><td>{{printf "%.1f" .Out.LatencyP50}}</td><td>{{printf "%.1f" .Out.LatencyP99}}</td><td>{{printf "%.0f" .Out.AllocP99}}</td><td>{{.Redis}}</td></tr>
{{end}}</table>
</details>
{{end}}
</body></html>
`))
