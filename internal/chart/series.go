package chart

import "math"

// Point is one datum, or in Polygon one pixel. Gap says data is missing
// just before it, so a line must not join it to the point before.
type Point struct {
	X, Y float64
	Gap  bool
}

// Series is a line of points in data units, drawn in one colour. A point
// whose Y is NaN or infinite is not drawn and breaks the line, so that a
// second with nothing to say is a gap rather than a fall to zero.
type Series struct {
	Points []Point
	Color  string
	Width  float64 // the line's stroke width; 1 when 0
	Dash   string  // stroke-dasharray, such as "4 2"
	Dot    float64 // the radius of a lone point's dot; Width+0.7 when 0
}

// Plot draws each unbroken stretch of s as a polyline and a lone point as
// a dot, since a one-point line is invisible.
func (c *SVG) Plot(p Panel, a Axis, s Series) {
	width := s.Width
	if width == 0 {
		width = 1
	}
	dot := s.Dot
	if dot == 0 {
		dot = width + 0.7
	}
	for _, seg := range segments(s.Points) {
		px := make([]Point, len(seg))
		for i, pt := range seg {
			px[i] = Point{X: p.PX(pt.X), Y: a.PY(p, pt.Y)}
		}
		if len(px) == 1 {
			c.Circle(px[0].X, px[0].Y, dot, Style{Fill: s.Color})
			continue
		}
		c.polyline(px, s.Color, width, s.Dash)
	}
}

// polyline is a stroke with round joins, so that a line which jumps from
// one second to the next has no spikes at its corners.
func (c *SVG) polyline(pts []Point, color string, width float64, dash string) {
	c.b.WriteString(`<polyline fill="none"`)
	writeAttr(&c.b, "stroke", color)
	writeNumAttr(&c.b, "stroke-width", width)
	c.b.WriteString(` stroke-linejoin="round"`)
	writeAttr(&c.b, "stroke-dasharray", dash)
	c.b.WriteString(` points="` + points(pts) + `"/>`)
}

// segments splits points into the stretches a line joins: it breaks at a
// point without a finite Y, which it drops, and before a point with Gap.
func segments(pts []Point) [][]Point {
	var segs [][]Point
	var cur []Point
	for _, pt := range pts {
		ok := !math.IsNaN(pt.Y) && !math.IsInf(pt.Y, 0)
		if (!ok || pt.Gap) && len(cur) > 0 {
			segs, cur = append(segs, cur), nil
		}
		if ok {
			cur = append(cur, pt)
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}
