package console

import (
	"fmt"
	"math"
	"time"

	"github.com/apollo-platform/apollo/internal/chart"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Cell map layout, in pixels.
const (
	mapSide, mapPad = 520, 16
	mapCaption      = 40
)

// minViewDeg is the smallest span a zoomed map shows (about 5.5 km), so
// that a single tripped cell is seen among its neighbours.
const minViewDeg = 0.05

// cellMap draws the rules' boxes and the cells tripped now, where they
// lie (north up), each cell shaded by how far over its threshold it is.
// With cells tripped it zooms to them, since a cell is a few hundred
// metres and a rule a city; without, it shows the rules whole. It needs
// no map tiles: the boxes are the geography that matters here.
func (c *Console) cellMap() string {
	now := c.now()
	rs := c.d.Spampede.Rules()
	cells := c.d.Spampede.TrippedCells(now, maxTripped)
	view, zoomed := mapView(rs.Rules, cells)
	p, ok := chart.FitBoxes([]chart.Box{view}, mapSide, mapPad)
	if !ok {
		svg := chart.New(mapSide, 60, chart.Attr{Name: "font-size", Value: "12"})
		svg.Text(mapPad, 30, "No Spampede rule is in force: there is nothing to map.", chart.Style{Fill: "#666"})
		return svg.String()
	}
	svg := chart.New(p.Width(), p.Height()+mapCaption, chart.Attr{Name: "font-size", Value: "11"}, chart.Attr{Name: "data-tripped", Value: fmt.Sprint(len(cells))})
	thresholds := map[string]int{}
	for _, r := range rs.Rules {
		thresholds[r.Name] = r.Threshold
		if b, ok := intersect(ruleBox(r), view); ok {
			drawRule(svg, p, r, b)
		}
	}
	for _, cs := range cells {
		drawTripped(svg, p, cs, thresholds[cs.Rule], now)
	}
	caption := fmt.Sprintf("%d cells tripped now (the darker, the further over its rule's threshold); rules outlined", len(cells))
	if zoomed {
		caption = fmt.Sprintf("%d cells tripped, zoomed to them: %.1f km across; darker is further over the threshold",
			len(cells), (view.MaxLng-view.MinLng)*111.32*math.Cos((view.MinLat+view.MaxLat)/2*math.Pi/180))
	}
	svg.Text(mapPad, p.Height()+16, caption, chart.Style{Fill: "#444"})
	svg.Text(p.Width()-4, 14, "N ↑", chart.Style{Anchor: "end", Bold: true, FontSize: 13})
	return svg.String()
}

// mapView is the area to draw: around the tripped cells (zoomed), or
// every rule's box.
func mapView(rules []spampede.Rule, cells []spampede.CellState) (view chart.Box, zoomed bool) {
	var boxes []chart.Box
	for _, cs := range cells {
		b := cs.Cell.Bounds()
		boxes = append(boxes, chart.Box{MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng})
	}
	zoomed = len(boxes) > 0
	if !zoomed {
		for _, r := range rules {
			boxes = append(boxes, ruleBox(r))
		}
	}
	if len(boxes) == 0 {
		return chart.Box{}, false
	}
	view = boxes[0]
	for _, b := range boxes[1:] {
		view = chart.Box{MinLat: math.Min(view.MinLat, b.MinLat), MaxLat: math.Max(view.MaxLat, b.MaxLat),
			MinLng: math.Min(view.MinLng, b.MinLng), MaxLng: math.Max(view.MaxLng, b.MaxLng)}
	}
	if zoomed {
		view = widen(view, minViewDeg)
	}
	return view, zoomed
}

// widen grows b about its centre to at least span degrees each way, and by
// a cell's worth of margin.
func widen(b chart.Box, span float64) chart.Box {
	grow := func(lo, hi float64) (float64, float64) {
		mid, half := (lo+hi)/2, math.Max((hi-lo)*0.6, span/2)
		return mid - half, mid + half
	}
	b.MinLat, b.MaxLat = grow(b.MinLat, b.MaxLat)
	b.MinLng, b.MaxLng = grow(b.MinLng, b.MaxLng)
	return b
}

func ruleBox(r spampede.Rule) chart.Box {
	return chart.Box{MinLat: r.MinLat, MaxLat: r.MaxLat, MinLng: r.MinLng, MaxLng: r.MaxLng}
}

// intersect is the part of a inside b; ok is false when there is none.
func intersect(a, b chart.Box) (chart.Box, bool) {
	out := chart.Box{MinLat: math.Max(a.MinLat, b.MinLat), MaxLat: math.Min(a.MaxLat, b.MaxLat),
		MinLng: math.Max(a.MinLng, b.MinLng), MaxLng: math.Min(a.MaxLng, b.MaxLng)}
	return out, out.MinLat < out.MaxLat && out.MinLng < out.MaxLng
}

// drawRule outlines the visible part b of rule r's box.
func drawRule(svg *chart.SVG, p chart.Proj, r spampede.Rule, b chart.Box) {
	x0, x1, y0, y1 := p.X(b.MinLng), p.X(b.MaxLng), p.Y(b.MaxLat), p.Y(b.MinLat)
	dash := ""
	if r.Shadow {
		dash = "6 3"
	}
	svg.Group("rule "+r.Name, chart.Attr{Name: "data-rule", Value: r.Name})
	svg.Rect(x0, y0, x1-x0, y1-y0, chart.Style{Fill: "#f4f8fb", Stroke: "#3182bd", StrokeWidth: 1.5, Dash: dash})
	svg.Text(x0+4, y0+14, r.Name, chart.Style{Fill: "#3182bd", Bold: true})
	svg.End()
}

func drawTripped(svg *chart.SVG, p chart.Proj, cs spampede.CellState, threshold int, now time.Time) {
	b := cs.Cell.Bounds()
	over := 1.0
	if threshold > 0 {
		over = cs.Count / float64(threshold)
	}
	opacity := math.Min(0.35+0.4*math.Max(over-1, 0), 0.95)
	tip := fmt.Sprintf("cell %s (%s, rule %s): %.1f unallocated against a threshold of %d, tripped for %s more",
		cs.Cell, cs.Service, cs.Rule, cs.Count, threshold, cs.Until.Sub(now).Round(time.Second))
	if cs.Shadow {
		tip += " (shadow: counted, not enforced)"
	}
	svg.Group(tip, chart.Attr{Name: "data-cell", Value: cs.Cell.String()}, chart.Attr{Name: "data-service", Value: cs.Service})
	pts := []chart.Point{{X: p.X(b.MinLng), Y: p.Y(b.MinLat)}, {X: p.X(b.MaxLng), Y: p.Y(b.MinLat)},
		{X: p.X(b.MaxLng), Y: p.Y(b.MaxLat)}, {X: p.X(b.MinLng), Y: p.Y(b.MaxLat)}}
	svg.Polygon(pts, chart.Style{Fill: "#d62728", Opacity: opacity, Stroke: "#7f0000", StrokeWidth: 1})
	if w, h := pts[1].X-pts[0].X, pts[0].Y-pts[2].Y; w > 30 && h > 14 {
		svg.Text((pts[0].X+pts[1].X)/2, (pts[0].Y+pts[2].Y)/2+4, fmt.Sprintf("%.0f", cs.Count), chart.Style{Anchor: "middle", Fill: "white", Bold: true})
	}
	svg.End()
}
