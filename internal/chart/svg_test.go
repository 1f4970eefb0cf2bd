package chart

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// body is what was drawn, without the header New writes and the closing tag.
func body(c *SVG) string {
	s := strings.TrimSuffix(c.String(), "</svg>")
	return s[strings.Index(s, `fill="white"/>`)+len(`fill="white"/>`):]
}

// drawCase is a drawing and the elements it must write.
type drawCase struct {
	name string
	draw func(c *SVG)
	want string
}

func checkDrawn(t *testing.T, cases []drawCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cv := New(10, 10)
			c.draw(cv)
			if got := body(cv); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestNewWritesTheHeaderAndAWhiteBackground(t *testing.T) {
	got := New(900, 520.5, Attr{Name: "font-size", Value: "12"}).String()
	want := `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="520.5" viewBox="0 0 900 520.5" font-family="sans-serif" font-size="12">` +
		`<rect width="100%" height="100%" fill="white"/></svg>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestTextAndAttributesAreEscaped(t *testing.T) {
	checkDrawn(t, []drawCase{
		{"text", func(c *SVG) { c.Text(1, 2, `<script>alert("x")</script> & more`, Style{}) },
			`<text x="1" y="2">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more</text>`},
		{"text keeps what needs no escaping", func(c *SVG) { c.Text(1, 2, "storm's 5–15 s · N ↑", Style{}) },
			`<text x="1" y="2">storm's 5–15 s · N ↑</text>`},
		{"a control character, which XML cannot carry", func(c *SVG) { c.Text(1, 2, "a\x00b\x1bc\td", Style{}) },
			"<text x=\"1\" y=\"2\">a\uFFFDb\uFFFDc\td</text>"},
		{"a style value", func(c *SVG) { c.Rect(0, 0, 1, 1, Style{Fill: `red" onload="x`}) },
			`<rect x="0" y="0" width="1" height="1" fill="red&quot; onload=&quot;x"/>`},
		{"a group's title and attribute", func(c *SVG) {
			c.Group(`cell <a&b>`, Attr{Name: "data-cell", Value: `"><script>`})
			c.End()
		}, `<g data-cell="&quot;&gt;&lt;script&gt;"><title>cell &lt;a&amp;b&gt;</title></g>`},
		{"an attribute name that is not a name", func(c *SVG) {
			c.Group("", Attr{Name: `x onload="y`, Value: "1"}, Attr{Name: "", Value: "2"}, Attr{Name: "1a", Value: "3"}, Attr{Name: "data-ok", Value: "4"})
			c.End()
		}, `<g data-ok="4"></g>`},
		{"spans", func(c *SVG) {
			c.TextSpans(10, 20, Style{}, Span{Text: "a<b", Style: Style{FontSize: 13, Bold: true}}, Span{Text: "c&d", Style: Style{Fill: "#555"}, DX: 8})
		}, `<text x="10" y="20"><tspan font-size="13" font-weight="bold">a&lt;b</tspan><tspan fill="#555" dx="8">c&amp;d</tspan></text>`},
	})
}

func TestShapesWriteTheirGeometryThenTheirStyle(t *testing.T) {
	checkDrawn(t, []drawCase{
		{"rect", func(c *SVG) {
			c.Rect(1.25, 2, 3, 4, Style{Fill: "none", Stroke: "#999", StrokeWidth: 2, Dash: "3 3", Opacity: 0.08})
		},
			`<rect x="1.2" y="2" width="3" height="4" fill="none" stroke="#999" stroke-width="2" stroke-dasharray="3 3" opacity="0.08"/>`},
		{"a rect drawn backwards", func(c *SVG) { c.Rect(10, 10, -4, -2, Style{}) }, `<rect x="6" y="8" width="4" height="2"/>`},
		{"line", func(c *SVG) { c.Line(1, 2, 3, 4, Style{Stroke: "#000"}) }, `<line x1="1" x2="3" y1="2" y2="4" stroke="#000"/>`},
		{"circle", func(c *SVG) { c.Circle(1, 2, 2.5, Style{Fill: "#31a354", Stroke: "white"}) }, `<circle cx="1" cy="2" r="2.5" fill="#31a354" stroke="white"/>`},
		{"ellipse", func(c *SVG) { c.Ellipse(1, 2, 9, 6, Style{Fill: "none"}) }, `<ellipse cx="1" cy="2" rx="9" ry="6" fill="none"/>`},
		{"polygon", func(c *SVG) { c.Polygon([]Point{{X: 0, Y: 0}, {X: 4, Y: 0}, {X: 2, Y: 3.33}}, Style{Fill: "red"}) },
			`<polygon fill="red" points="0,0 4,0 2,3.3"/>`},
		{"text", func(c *SVG) { c.Text(1, 2, "x", Style{Anchor: "end", Fill: "#444", FontSize: 10.5, Bold: true}) },
			`<text x="1" y="2" text-anchor="end" fill="#444" font-size="10.5" font-weight="bold">x</text>`},
		{"numbers that are not finite", func(c *SVG) { c.Circle(math.NaN(), math.Inf(1), -0.01, Style{StrokeWidth: math.NaN()}) },
			`<circle cx="0" cy="0" r="0"/>`},
	})
}

func TestStringClosesOpenGroupsAndLeavesTheCanvasAsItWas(t *testing.T) {
	c := New(10, 10)
	c.Group("outer")
	c.Group("inner")
	c.Rect(0, 0, 1, 1, Style{})
	first := c.String()
	if !strings.HasSuffix(first, "</g></g></svg>") {
		t.Errorf("open groups not closed: %s", first)
	}
	if second := c.String(); second != first {
		t.Errorf("String changed the canvas: %s, then %s", first, second)
	}
	c.End()
	c.End()
	c.End() // one too many: nothing to close
	if got := c.String(); got != first {
		t.Errorf("after End: %s, want %s", got, first)
	}
	var b strings.Builder
	if n, err := c.WriteTo(&b); err != nil || n != int64(len(first)) || b.String() != first {
		t.Errorf("WriteTo wrote %d bytes (%v): %s", n, err, b.String())
	}
}

func TestADrawingIsWellFormedXML(t *testing.T) {
	c := New(300, 200, Attr{Name: "font-size", Value: "11"})
	p := Panel{X: 40, Y: 10, W: 250, H: 150, X1: 60}
	a := LogDecades([]float64{2, 3000}, Ms)
	c.Shade(p, 10, 40, Style{Fill: "#fcdcdc", Opacity: 0.8})
	c.Frame(p, "#999")
	c.YGrid(p, a, TickStyle{Line: Style{Stroke: "#eee"}, Label: Style{Anchor: "end"}, DX: -4, DY: 3.5})
	c.XTicks(p, func(x float64) string { return Ms(1000 * x) }, TickStyle{Line: Style{Stroke: "#999"}, Mark: 3, DY: 14})
	c.Plot(p, a, Series{Points: []Point{{X: 1, Y: 2}, {X: 2, Y: math.NaN()}, {X: 3, Y: 3000}, {X: 4, Y: 50}}, Color: "#e6550d"})
	c.Group(`a "cell" <here>`, Attr{Name: "data-cell", Value: "u4pruy&d"})
	c.Polygon([]Point{{X: 1, Y: 1}, {X: 5, Y: 1}, {X: 3, Y: 4}}, Style{Fill: "red"})
	dec := xml.NewDecoder(strings.NewReader(c.String()))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, c.String())
		}
	}
}
