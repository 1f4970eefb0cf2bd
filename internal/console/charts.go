package console

import (
	"fmt"
	"math"
	"time"

	"github.com/apollo-platform/apollo/internal/chart"
)

// line is one series of a time chart: a counter's rate per second.
type line struct {
	label, color string
	name         string
	where        map[string]string
	dash         string
}

// panelSpec is one plot of a time chart.
type panelSpec struct {
	title string
	lines []line
}

// timeCharts are the console's charts of the last minutes, by name.
var timeCharts = map[string][]panelSpec{
	"traffic": {
		{"Redis commands per second, by result", []line{
			{"ok", "#1f77b4", "apollo_redis_commands_total", map[string]string{"result": "ok"}, ""},
			{"failed", "#d62728", "apollo_redis_commands_total", map[string]string{"result": "error"}, ""},
			{"ambiguous", "#9467bd", "apollo_redis_commands_total", map[string]string{"result": "ambiguous"}, "4 2"},
			{"unconfirmed", "#8c564b", "apollo_redis_commands_total", map[string]string{"result": "unconfirmed"}, "2 2"},
		}},
		{"Resilience at work, per second", []line{
			{"hedges", "#ff7f0e", "apollo_redis_hedges_total", map[string]string{"outcome": "sent"}, ""},
			{"retries", "#2ca02c", "apollo_redis_retries_total", map[string]string{"outcome": "sent"}, ""},
			{"fallbacks to primaries", "#17becf", "apollo_redis_read_fallbacks_total", map[string]string{"outcome": "sent"}, ""},
			{"reads shed", "#d62728", "apollo_redis_read_fallbacks_total", map[string]string{"outcome": "shed"}, "4 2"},
		}},
	},
	"bookings": {
		{"Bookings per second, by outcome", []line{
			{"created", "#1f77b4", "apollo_bookings_total", map[string]string{"outcome": "created"}, ""},
			{"allocated", "#2ca02c", "apollo_bookings_total", map[string]string{"outcome": "allocated"}, ""},
			{"unallocated", "#ff7f0e", "apollo_bookings_total", map[string]string{"outcome": "unallocated"}, ""},
			{"turned away", "#d62728", "apollo_bookings_total", map[string]string{"outcome": "turned_away"}, ""},
		}},
	},
	"spampede": {
		{"Spampede decisions per second, by outcome", []line{
			{"admitted", "#2ca02c", "apollo_spampede_decisions_total", map[string]string{"outcome": "admitted"}, ""},
			{"rejected", "#d62728", "apollo_spampede_decisions_total", map[string]string{"outcome": "rejected"}, ""},
			{"rejected, cell already tripped", "#ff9896", "apollo_spampede_decisions_total", map[string]string{"outcome": "rejected_cached"}, ""},
			{"would reject (shadow)", "#7b3294", "apollo_spampede_decisions_total", map[string]string{"outcome": "shadow_rejected"}, "4 2"},
			{"failing open", "#e6a700", "apollo_spampede_decisions_total", map[string]string{"outcome": "fail_open"}, "2 2"},
		}},
	},
}

// Time chart layout, in pixels.
const (
	tcWidth, tcPlotL, tcPlotR = 560, 52, 12
	tcTitle, tcPlotH, tcFoot  = 20, 110, 56
)

// chart draws the named chart now; ok is false for an unknown name.
func (c *Console) chart(name string) (string, bool) {
	if name == "map" {
		return c.cellMap(), true
	}
	spec, ok := timeCharts[name]
	if !ok {
		return "", false
	}
	return drawTimeChart(spec, c.d.Sampler.all()), true
}

// drawTimeChart draws each panel's lines over the samples kept, the
// newest at the right edge, x in seconds before it.
func drawTimeChart(spec []panelSpec, samples []sample) string {
	rowH := float64(tcTitle + tcPlotH + tcFoot)
	svg := chart.New(tcWidth, rowH*float64(len(spec)), chart.Attr{Name: "font-size", Value: "11"})
	span := 60.0
	var end time.Time
	if n := len(samples); n > 0 {
		end = samples[n-1].at
		span = math.Max(span, end.Sub(samples[0].at).Seconds())
	}
	for i, ps := range spec {
		top := rowH * float64(i)
		p := chart.Panel{X: tcPlotL, Y: top + tcTitle, W: tcWidth - tcPlotL - tcPlotR, H: tcPlotH, X0: -span, X1: 0}
		series := make([][]chart.Point, len(ps.lines))
		peak := 0.0
		for k, l := range ps.lines {
			for _, pt := range perSecond(samples, l.name, l.where) {
				x := -end.Sub(pt.At).Seconds()
				series[k] = append(series[k], chart.Point{X: x, Y: pt.V})
				peak = math.Max(peak, pt.V)
			}
		}
		a := chart.Linear(0, chart.NiceCeil(peak), func(v float64) string { return fmt.Sprintf("%g/s", v) })
		svg.Text(p.X, top+14, ps.title, chart.Style{Bold: true})
		svg.YGrid(p, a, chart.TickStyle{Line: chart.Style{Stroke: "#000", Opacity: 0.08}, Label: chart.Style{Anchor: "end", Fill: "#444", FontSize: 10}, DX: -4, DY: 3.5})
		svg.Frame(p, "#999")
		svg.XTicks(p, func(x float64) string { return fmt.Sprintf("%gs", x) }, chart.TickStyle{Line: chart.Style{Stroke: "#999"}, Mark: 3, Label: chart.Style{Anchor: "middle", Fill: "#444", FontSize: 10}, DY: 14})
		for k, l := range ps.lines {
			svg.Plot(p, a, chart.Series{Points: series[k], Color: l.color, Width: 1.8, Dash: l.dash})
		}
		legend(svg, p.X, p.Y+p.H+30, ps.lines, series)
	}
	return svg.String()
}

// legend names each line with its latest value, so the figure under the
// cursor of the eye is there to read.
func legend(svg *chart.SVG, x, y float64, lines []line, series [][]chart.Point) {
	x0 := x
	for k, l := range lines {
		last := 0.0
		if n := len(series[k]); n > 0 {
			last = series[k][n-1].Y
		}
		text := fmt.Sprintf("%s %.1f/s", l.label, last)
		if w := 34 + 5.6*float64(len(text)); x+w > tcWidth && x > x0 {
			x, y = x0, y+14 // on to the next line
		}
		svg.Line(x, y-4, x+16, y-4, chart.Style{Stroke: l.color, StrokeWidth: 2.5, Dash: l.dash})
		svg.Text(x+20, y, text, chart.Style{})
		x += 34 + 5.6*float64(len(text))
	}
}
