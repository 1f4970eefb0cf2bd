package spike

import (
	"errors"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"

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
			P99: fmtMs(roundMs(l.OutsideP99)), P99Vs: fmtChange(l.P99VsBase), AllocP99: fmtMs(roundMs(l.OutsideAllocP99)),
			Rejected: l.InsideRejected, Would: l.InsideWould, Within: l.Within5Pct,
			SettledP99: fmtMs(roundMs(l.SettledP99)), SettledP99Vs: fmtChange(l.SettledP99VsBase), SettledWithin: l.SettledWithin5Pct,
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

// cellProj is an equirectangular projection, north up: at a city's scale
// scaling longitude by cos(latitude) keeps cells their true shape.
type cellProj struct {
	minLat, maxLat, minLng, maxLng float64
	cos, k                         float64
}

func newCellProj(boxes []Box, h Hotspot) (cellProj, bool) {
	p := cellProj{minLat: math.Inf(1), maxLat: math.Inf(-1), minLng: math.Inf(1), maxLng: math.Inf(-1)}
	extend := func(lat0, lat1, lng0, lng1 float64) {
		p.minLat, p.maxLat = math.Min(p.minLat, lat0), math.Max(p.maxLat, lat1)
		p.minLng, p.maxLng = math.Min(p.minLng, lng0), math.Max(p.maxLng, lng1)
	}
	for _, b := range boxes {
		extend(b.MinLat, b.MaxLat, b.MinLng, b.MaxLng)
	}
	dLat, dLng := hotspotDegrees(h)
	if h.RadiusM > 0 {
		extend(h.Lat-dLat, h.Lat+dLat, h.Lng-dLng, h.Lng+dLng)
	}
	p.cos = math.Cos((p.minLat + p.maxLat) / 2 * math.Pi / 180)
	w, ht := (p.maxLng-p.minLng)*p.cos, p.maxLat-p.minLat
	if !isFinite(w) || !isFinite(ht) || w <= 0 || ht <= 0 {
		return p, false
	}
	p.k = mapSide / math.Max(w, ht)
	return p, true
}

func hotspotDegrees(h Hotspot) (dLat, dLng float64) {
	ne := sim.Offset(driver.Location{Lat: h.Lat, Lng: h.Lng}, h.RadiusM, h.RadiusM)
	return ne.Lat - h.Lat, ne.Lng - h.Lng
}

func (p cellProj) x(lng float64) float64 { return mapPad + (lng-p.minLng)*p.cos*p.k }
func (p cellProj) y(lat float64) float64 { return mapPad + (p.maxLat-lat)*p.k }
func (p cellProj) width() float64        { return 2*mapPad + (p.maxLng-p.minLng)*p.cos*p.k }
func (p cellProj) height() float64       { return 2*mapPad + (p.maxLat-p.minLat)*p.k }

// cellMapSVG draws a run's cells where they lie: colour for unallocated
// bookings, a dot sized by trips started, the numbers written in, and the
// hotspot with its own cells outlined on top.
func cellMapSVG(run Run, h Hotspot, sc cellScale) string {
	boxes := append([]Box(nil), h.Cells...)
	for _, c := range run.Grid {
		boxes = append(boxes, c.Box)
	}
	p, ok := newCellProj(boxes, h)
	if len(run.Grid) == 0 || !ok {
		return ""
	}
	width := math.Max(p.width(), 460)
	height := p.height() + 58
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`, width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`)
	fs := cellFontSize(p, run.Grid, sc)
	for _, c := range run.Grid {
		drawCell(&b, p, c, sc, fs)
	}
	drawHotspot(&b, p, h)
	drawCellLegend(&b, p.height()+14, h, sc)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" font-weight="bold" font-size="13">N ↑</text>`, width-mapPad, p.height()+24)
	b.WriteString(`</svg>`)
	return b.String()
}

func drawCell(b *strings.Builder, p cellProj, c CellStat, sc cellScale, fs float64) {
	x0, x1, y0, y1 := p.x(c.MinLng), p.x(c.MaxLng), p.y(c.MaxLat), p.y(c.MinLat)
	w, h := x1-x0, y1-y0
	tip := fmt.Sprintf("cell %s: %d requested, %d allocated, %d unallocated, %d rejected, %d trips started",
		c.Cell, c.Requested, c.Allocated, c.Unallocated, c.Rejected, c.Trips)
	fmt.Fprintf(b, `<g><title>%s</title>`, html.EscapeString(tip))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#bbb"/>`, x0, y0, w, h, unallocColor(c.Unallocated, sc.unallocated))
	if sc.trips > 0 && c.Trips > 0 {
		most := math.Min(w, h) * 0.2
		r := math.Max(most*math.Sqrt(float64(c.Trips)/float64(sc.trips)), 1.5)
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="#31a354" stroke="white"/>`, x1-most-3, y1-most-3, r)
	}
	drawCellNumbers(b, x0, y0, c, sc, fs)
	b.WriteString(`</g>`)
}

// cellFontSize is one size for the whole map, the largest at which the
// widest possible count fits the smallest cell; 0 when none is legible.
func cellFontSize(p cellProj, grid []CellStat, sc cellScale) float64 {
	w, h := math.Inf(1), math.Inf(1)
	for _, c := range grid {
		w = math.Min(w, p.x(c.MaxLng)-p.x(c.MinLng))
		h = math.Min(h, p.y(c.MinLat)-p.y(c.MaxLat))
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
func drawCellNumbers(b *strings.Builder, x0, y0 float64, c CellStat, sc cellScale, fs float64) {
	if fs == 0 {
		return
	}
	ink := "#222"
	if sc.unallocated > 0 && float64(c.Unallocated) > 0.55*float64(sc.unallocated) {
		ink = "white"
	}
	i := 0
	for _, n := range []struct {
		v    int
		unit string
	}{{c.Unallocated, "unallocated"}, {c.Rejected, "rejected"}, {c.Trips, "trips"}} {
		if n.v != 0 {
			i++
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%.1f" fill="%s">%d %s</text>`, x0+4, y0+fs*1.25*float64(i), fs, ink, n.v, n.unit)
		}
	}
}

func drawHotspot(b *strings.Builder, p cellProj, h Hotspot) {
	for _, c := range h.Cells {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#111" stroke-width="2"/>`,
			p.x(c.MinLng), p.y(c.MaxLat), p.x(c.MaxLng)-p.x(c.MinLng), p.y(c.MinLat)-p.y(c.MaxLat))
	}
	if h.RadiusM <= 0 {
		return
	}
	dLat, dLng := hotspotDegrees(h)
	fmt.Fprintf(b, `<ellipse cx="%.1f" cy="%.1f" rx="%.1f" ry="%.1f" fill="none" stroke="#08519c" stroke-width="2" stroke-dasharray="6 3"/>`,
		p.x(h.Lng), p.y(h.Lat), dLng*p.cos*p.k, dLat*p.k)
}

func drawCellLegend(b *strings.Builder, y float64, h Hotspot, sc cellScale) {
	fmt.Fprintf(b, `<text x="%.0f" y="%.1f">unallocated bookings: 0</text>`, mapPad, y+9)
	for i := range 5 {
		fmt.Fprintf(b, `<rect x="%.0f" y="%.1f" width="18" height="12" fill="%s" stroke="#bbb"/>`, mapPad+140+float64(i)*18, y, unallocColor(i*sc.unallocated/4, sc.unallocated))
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.1f">%d (most of any cell, any run)</text>`, mapPad+236, y+9, sc.unallocated)
	y += 24
	fmt.Fprintf(b, `<circle cx="%.0f" cy="%.1f" r="5" fill="#31a354"/><text x="%.0f" y="%.1f">trips started (area)</text>`, mapPad+5, y, mapPad+14, y+4)
	fmt.Fprintf(b, `<rect x="%.0f" y="%.1f" width="16" height="10" fill="none" stroke="#111" stroke-width="2"/><text x="%.0f" y="%.1f">hotspot's cells</text>`, mapPad+140, y-5, mapPad+160, y+4)
	fmt.Fprintf(b, `<ellipse cx="%.0f" cy="%.1f" rx="9" ry="6" fill="none" stroke="#08519c" stroke-width="2" stroke-dasharray="4 2"/><text x="%.0f" y="%.1f">hotspot, %.0f m</text>`, mapPad+270, y, mapPad+284, y+4, h.RadiusM)
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
