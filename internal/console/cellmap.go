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

// cellMap draws the rules' boxes and the cells tripped now, where they
// lie (north up), each cell shaded by how far over its threshold it is.
// It needs no map tiles: the boxes are the geography that matters here.
func (c *Console) cellMap() string {
	now := c.now()
	rs := c.d.Spampede.Rules()
	cells := c.d.Spampede.TrippedCells(now, maxTripped)
	var boxes []chart.Box
	for _, r := range rs.Rules {
		boxes = append(boxes, chart.Box{MinLat: r.MinLat, MaxLat: r.MaxLat, MinLng: r.MinLng, MaxLng: r.MaxLng})
	}
	for _, cs := range cells {
		b := cs.Cell.Bounds()
		boxes = append(boxes, chart.Box{MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng})
	}
	p, ok := chart.FitBoxes(boxes, mapSide, mapPad)
	if !ok {
		svg := chart.New(mapSide, 60, chart.Attr{Name: "font-size", Value: "12"})
		svg.Text(mapPad, 30, "No Spampede rule is in force: there is nothing to map.", chart.Style{Fill: "#666"})
		return svg.String()
	}
	svg := chart.New(p.Width(), p.Height()+mapCaption, chart.Attr{Name: "font-size", Value: "11"}, chart.Attr{Name: "data-tripped", Value: fmt.Sprint(len(cells))})
	for _, r := range rs.Rules {
		drawRule(svg, p, r)
	}
	thresholds := map[string]int{}
	for _, r := range rs.Rules {
		thresholds[r.Name] = r.Threshold
	}
	for _, cs := range cells {
		drawTripped(svg, p, cs, thresholds[cs.Rule], now)
	}
	caption := fmt.Sprintf("%d cells tripped now (red: the darker, the further over its rule's threshold); rules outlined", len(cells))
	svg.Text(mapPad, p.Height()+16, caption, chart.Style{Fill: "#444"})
	svg.Text(p.Width()-mapPad, p.Height()+16, "N ↑", chart.Style{Anchor: "end", Bold: true, FontSize: 13})
	return svg.String()
}

func drawRule(svg *chart.SVG, p chart.Proj, r spampede.Rule) {
	x0, x1, y0, y1 := p.X(r.MinLng), p.X(r.MaxLng), p.Y(r.MaxLat), p.Y(r.MinLat)
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
	svg.End()
}
