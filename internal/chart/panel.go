package chart

import (
	"math"
	"strconv"
)

// Panel is a plot area: X, Y, W, H in pixels (Y at the top), showing data
// x from X0 at its left edge to X1 at its right.
type Panel struct {
	X, Y, W, H float64
	X0, X1     float64
}

// PX is the x pixel of a data x; a panel without a range puts it at the
// left edge.
func (p Panel) PX(x float64) float64 {
	if p.X1 == p.X0 {
		return p.X
	}
	return p.X + (x-p.X0)/(p.X1-p.X0)*p.W
}

// TickStyle is how YGrid and XTicks draw a tick: Line is the grid line
// across the panel (YGrid) or the mark below it (XTicks, Mark pixels long;
// no mark when 0); Label is the label's style, placed DX, DY from the
// tick's point on the panel's left edge (YGrid) or bottom edge (XTicks).
type TickStyle struct {
	Line   Style
	Mark   float64
	Label  Style
	DX, DY float64
}

// Frame outlines p.
func (c *SVG) Frame(p Panel, stroke string) {
	c.Rect(p.X, p.Y, p.W, p.H, Style{Fill: "none", Stroke: stroke})
}

// Shade paints the window [x0, x1] of data x over the panel's height,
// such as a storm or a fault, cut to the panel; nothing when it is empty.
func (c *SVG) Shade(p Panel, x0, x1 float64, st Style) {
	x0, x1 = math.Max(x0, p.X0), math.Min(x1, p.X1)
	if !(x1 > x0) {
		return
	}
	from, to := p.PX(x0), p.PX(x1)
	c.Rect(from, p.Y, to-from, p.H, st)
}

// YGrid draws a line across p at each of a's ticks, when t.Line has a
// stroke, and the tick's label beside it.
func (c *SVG) YGrid(p Panel, a Axis, t TickStyle) {
	for _, v := range a.Ticks {
		y := a.PY(p, v)
		if t.Line.Stroke != "" {
			c.Line(p.X, y, p.X+p.W, y, t.Line)
		}
		c.Text(p.X+t.DX, y+t.DY, a.label(v), t.Label)
	}
}

// XTicks marks the panel's bottom edge at every multiple of
// TickStep(X1-X0) within [X0, X1], and writes label(x) there (the shortest
// decimal when label is nil).
func (c *SVG) XTicks(p Panel, label func(x float64) string, t TickStyle) {
	if !positive(p.X1 - p.X0) {
		return
	}
	step := TickStep(p.X1 - p.X0)
	bottom := p.Y + p.H
	for x := math.Ceil(p.X0/step) * step; x <= p.X1+1e-9; x += step {
		px := p.PX(x)
		if t.Mark > 0 {
			c.Line(px, bottom, px, bottom+t.Mark, t.Line)
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if label != nil {
			s = label(x)
		}
		c.Text(px+t.DX, bottom+t.DY, s, t.Label)
	}
}

// TickStep is the step, in seconds, that gives about five labelled ticks
// over span seconds, on steps a reader counts in (1, 2, 5, 10, 15, 20, 30
// seconds, whole minutes, whole hours).
func TickStep(span float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600} {
		if span/s <= 6 {
			return s
		}
	}
	return 3600 * math.Ceil(span/3600/6)
}
