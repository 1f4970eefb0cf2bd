package drill

import (
	"fmt"
	"io"
	"math"

	"github.com/apollo-platform/apollo/internal/chart"
)

var configColors = map[string]string{ConfigLegacy: "#d62728", ConfigGoRedis: "#ff7f0e", ConfigApollo: "#2ca02c"}

const (
	svgW, svgH   = 900, 520
	padL, padR   = 70, 20
	panelH       = 170
	top1, top2   = 60, 300
	minMs, maxMs = 0.5, 10000.0
)

// WriteSVG draws the drill: per second, the share of calls fully answered
// and the p99 latency (log scale) of each configuration, with the fault
// window shaded. It is self-contained, for a README or a postmortem.
func WriteSVG(w io.Writer, res Result) error {
	c := chart.New(svgW, svgH, chart.Attr{Name: "font-size", Value: "12"})
	c.Text(padL, 22, fmt.Sprintf("apollo drill --scenario %s: %s", res.Scenario, res.Fault), chart.Style{FontSize: 15, Bold: true})
	c.Text(padL, 40, fmt.Sprintf("%d workers × batch reads of %d drivers; fault at %.0fs", res.Workers, res.Pipeline, res.FaultAtS), chart.Style{Fill: "#555"})
	okP := chart.Panel{X: padL, Y: top1, W: svgW - padL - padR, H: panelH, X1: res.Duration}
	latP := okP
	latP.Y = top2
	end := res.Duration
	if res.HealAtS > 0 {
		end = res.HealAtS
	}
	for _, p := range []chart.Panel{okP, latP} {
		c.Shade(p, res.FaultAtS, end, chart.Style{Fill: "#f3d5d5", Opacity: 0.6})
		c.Frame(p, "#999")
	}
	c.Text(okP.PX(res.FaultAtS)+4, top1+14, "fault", chart.Style{Fill: "#a33"})
	okAxis := chart.Linear(0, 1, chart.Percent)
	// A fixed range, under a millisecond to ten seconds: every drill is drawn
	// on the same scale.
	latAxis := chart.Axis{Lo: minMs, Hi: maxMs, Log: true, Ticks: []float64{1, 10, 100, 1000, 10000},
		Label: func(v float64) string { return fmt.Sprintf("%g ms", v) }}
	grid := chart.TickStyle{Line: chart.Style{Stroke: "#eee"}, Label: chart.Style{Anchor: "end"}, DX: -6, DY: 4}
	c.YGrid(okP, okAxis, grid)
	c.YGrid(latP, latAxis, grid)
	c.Text(padL, top1-6, "calls with every command answered, per second", chart.Style{Bold: true})
	c.Text(padL, top2-6, "p99 call latency, per second (log scale)", chart.Style{Bold: true})
	c.XTicks(latP, func(t float64) string { return fmt.Sprintf("%.0fs", t) }, chart.TickStyle{Label: chart.Style{Anchor: "middle"}, DY: 16})
	for i, r := range res.Configs {
		color := configColors[r.Name]
		if color == "" {
			color = "#1f77b4"
		}
		ok, lat := configSeries(r, color)
		c.Plot(okP, okAxis, ok)
		c.Plot(latP, latAxis, lat)
		lx := float64(padL + 10 + i*260)
		c.Rect(lx, svgH-22, 14, 4, chart.Style{Fill: color})
		c.Text(lx+20, svgH-16, fmt.Sprintf("%s: %.2f%% ok, max %.0f ms", r.Name, 100*r.CallSuccessRatio, r.MaxMs), chart.Style{})
	}
	_, err := c.WriteTo(w)
	return err
}

// configSeries is a configuration's two lines, plotted mid-second. A
// second with no completed call has no latency, so it breaks the latency
// line; its success share is 0, which is what the callers saw.
func configSeries(r Report, color string) (ok, lat chart.Series) {
	ok = chart.Series{Color: color, Width: 2}
	lat = chart.Series{Color: color, Width: 2, Dot: 2.5}
	for _, s := range r.PerSecond {
		x, p99 := float64(s.T)+0.5, s.P99Ms
		if s.Calls == 0 {
			p99 = math.NaN()
		}
		ok.Points = append(ok.Points, chart.Point{X: x, Y: s.SuccessRatio()})
		lat.Points = append(lat.Points, chart.Point{X: x, Y: p99})
	}
	return ok, lat
}
