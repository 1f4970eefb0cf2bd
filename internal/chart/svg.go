package chart

import (
	"io"
	"strings"
)

// SVG is a canvas: elements are appended in drawing order, later ones on
// top. Its zero value is not usable; call New.
type SVG struct {
	b    strings.Builder
	open int // groups not yet ended
}

// Span is one run of a text with a style of its own; DX moves it right of
// the run before it.
type Span struct {
	Text  string
	Style Style
	DX    float64
}

// New starts a w × h picture whose user units are pixels, on white so that
// it reads the same on a dark page. attrs go on the svg element, where
// they apply to everything inside (a default font-size, say).
func New(w, h float64, attrs ...Attr) *SVG {
	c := &SVG{}
	c.b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg"`)
	writeCoords(&c.b, []string{"width", "height"}, w, h)
	c.b.WriteString(` viewBox="0 0 ` + num(w) + " " + num(h) + `" font-family="sans-serif"`)
	writeExtra(&c.b, attrs)
	c.b.WriteString(`><rect width="100%" height="100%" fill="white"/>`)
	return c
}

func writeExtra(b *strings.Builder, attrs []Attr) {
	for _, a := range attrs {
		writeAttr(b, a.Name, a.Value)
	}
}

// Text writes s with its baseline starting at (x, y), or centred or ending
// there by st.Anchor.
func (c *SVG) Text(x, y float64, s string, st Style) {
	c.TextSpans(x, y, st, Span{Text: s})
}

// TextSpans writes one line of text made of differently styled runs, for a
// bold name followed by a grey caption whose width nobody has to measure.
func (c *SVG) TextSpans(x, y float64, st Style, spans ...Span) {
	c.b.WriteString("<text")
	writeCoords(&c.b, []string{"x", "y"}, x, y)
	st.attrs(&c.b)
	c.b.WriteString(">")
	for _, sp := range spans {
		if sp.Style == (Style{}) && sp.DX == 0 {
			c.b.WriteString(escape(sp.Text))
			continue
		}
		c.b.WriteString("<tspan")
		sp.Style.attrs(&c.b)
		writeNumAttr(&c.b, "dx", sp.DX)
		c.b.WriteString(">" + escape(sp.Text) + "</tspan>")
	}
	c.b.WriteString("</text>")
}

// Rect draws a rectangle; a negative width or height extends it left or
// up, rather than making an element SVG refuses to draw.
func (c *SVG) Rect(x, y, w, h float64, st Style) {
	if w < 0 {
		x, w = x+w, -w
	}
	if h < 0 {
		y, h = y+h, -h
	}
	c.shape("rect", []string{"x", "y", "width", "height"}, []float64{x, y, w, h}, st)
}

// Line draws a segment from (x1, y1) to (x2, y2); it needs st.Stroke to
// show.
func (c *SVG) Line(x1, y1, x2, y2 float64, st Style) {
	c.shape("line", []string{"x1", "x2", "y1", "y2"}, []float64{x1, x2, y1, y2}, st)
}

// Circle draws a circle of radius r around (cx, cy).
func (c *SVG) Circle(cx, cy, r float64, st Style) {
	c.shape("circle", []string{"cx", "cy", "r"}, []float64{cx, cy, r}, st)
}

// Ellipse draws an ellipse with radii rx, ry around (cx, cy).
func (c *SVG) Ellipse(cx, cy, rx, ry float64, st Style) {
	c.shape("ellipse", []string{"cx", "cy", "rx", "ry"}, []float64{cx, cy, rx, ry}, st)
}

// Polygon draws the closed shape through pts, which are in pixels here,
// not in data units.
func (c *SVG) Polygon(pts []Point, st Style) {
	c.b.WriteString("<polygon")
	st.attrs(&c.b)
	c.b.WriteString(` points="` + points(pts) + `"/>`)
}

func (c *SVG) shape(name string, geom []string, vs []float64, st Style) {
	c.b.WriteString("<" + name)
	writeCoords(&c.b, geom, vs...)
	st.attrs(&c.b)
	c.b.WriteString("/>")
}

// points is the value of a points attribute: "x,y x,y …".
func points(pts []Point) string {
	s := make([]string, len(pts))
	for i, p := range pts {
		s[i] = num(p.X) + "," + num(p.Y)
	}
	return strings.Join(s, " ")
}

// Group starts a group of elements that share attrs, such as data-cell for
// a page's script to find, and a tooltip (no title: no tooltip). End
// closes it.
func (c *SVG) Group(title string, attrs ...Attr) {
	c.b.WriteString("<g")
	writeExtra(&c.b, attrs)
	c.b.WriteString(">")
	if title != "" {
		c.b.WriteString("<title>" + escape(title) + "</title>")
	}
	c.open++
}

// End closes the innermost open group; it does nothing when none is open.
func (c *SVG) End() {
	if c.open > 0 {
		c.b.WriteString("</g>")
		c.open--
	}
}

// String is the picture so far as a complete document: open groups and
// the svg closed, the canvas left as it was.
func (c *SVG) String() string {
	return c.b.String() + strings.Repeat("</g>", c.open) + "</svg>"
}

// WriteTo writes String to w.
func (c *SVG) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, c.String())
	return int64(n), err
}
