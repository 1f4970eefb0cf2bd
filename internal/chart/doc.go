// Package chart draws the project's pictures as standalone SVG: the spike
// report's timeline and cell maps, the drill's figure, and the live
// console's charts. It writes SVG text and nothing else: no scripts, no
// external assets, every string escaped, so a picture can be inlined in a
// page or attached to a postmortem as is.
//
// # Canvas
//
//	c := chart.New(w, h float64, attrs ...chart.Attr) *chart.SVG
//
// New writes the <svg> header (xmlns, width, height, viewBox,
// font-family="sans-serif", then attrs such as font-size) and a white
// background. Drawing methods take a [Style] (fill, stroke, stroke width,
// dash, opacity, text anchor, font size, bold); a zero field is left out.
//
//	c.Text(x, y, s, st)               c.TextSpans(x, y, st, spans ...Span)
//	c.Rect(x, y, w, h, st)            c.Line(x1, y1, x2, y2, st)
//	c.Circle(cx, cy, r, st)           c.Ellipse(cx, cy, rx, ry, st)
//	c.Polygon(pts []Point, st)
//	c.Group(title, attrs ...Attr) … c.End()   // <g data-cell="…"><title>tooltip</title> … </g>
//	c.String() string                 c.WriteTo(w io.Writer) (int64, error)
//
// String and WriteTo close any open group and the svg; the canvas can be
// drawn on further afterwards. Text, titles and attribute values are
// escaped; an attribute whose name is not a plain XML name is left out.
// Coordinates are written to a tenth of a pixel, a non-finite one as 0;
// style numbers (opacity, widths, font sizes) as they are given.
//
// The types: [Attr]{Name, Value}; [Style]{Anchor, Fill, Stroke,
// StrokeWidth, Dash, Opacity, FontSize, Bold}; [Span]{Text, Style, DX};
// [Point]{X, Y, Gap}; [Series]{Points, Color, Width, Dash, Dot};
// [Panel]{X, Y, W, H, X0, X1}; [Axis]{Lo, Hi, Log, Ticks, Label};
// [TickStyle]{Line, Mark, Label, DX, DY}; [Box]{MinLat, MaxLat, MinLng,
// MaxLng}; [Proj].
//
// # Panels, axes and series
//
// A [Panel] is a plot area in pixels over a data range [X0, X1] of x
// (seconds, for the timelines): [Panel.PX] maps an x to a pixel. An [Axis]
// maps a value to a y pixel in a panel with [Axis.PY] ([Axis.Frac] is how
// far up it is, from 0 to 1), linearly or by decades, and carries its
// ticks and their label:
//
//	chart.Linear(lo, hi, label) Axis     // ticks at lo, the middle and hi; pass hi = chart.NiceCeil(max)
//	chart.LogDecades(values, label) Axis // whole decades around the positive, finite values
//	chart.NiceCeil(v) float64            // 1, 2 or 5 × a power of ten, ≥ v
//	chart.TickStep(span) float64         // about five x ticks over span seconds
//	chart.Ms(v), chart.Percent(v) string // "12 ms", "1.5 s"; 0.5 → "50%"
//
// The canvas draws on panels:
//
//	c.Frame(p, stroke)                   // the panel's outline
//	c.Shade(p, x0, x1, st)               // a window of x, the panel's full height
//	c.YGrid(p, a, TickStyle)             // a grid line and a label at each of a's ticks
//	c.XTicks(p, label, TickStyle)        // every TickStep(X1-X0), a mark below the panel and a label
//	c.Plot(p, a, Series)                 // a line; a NaN y or a Point.Gap breaks it, a lone point is a dot
//
// # Maps
//
// [FitBoxes] scales latitude/longitude boxes (cells) so that the longer
// side of their extent is side pixels, inside a margin of pad, north up,
// with longitude scaled by cos(latitude) so that cells keep their true
// shape at a city's scale:
//
//	p, ok := chart.FitBoxes(boxes []chart.Box, side, pad float64) // ok is false without a positive extent
//	p.X(lng), p.Y(lat), p.DX(dLng), p.DY(dLat), p.Width(), p.Height()
package chart
