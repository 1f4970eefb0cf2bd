package chart

import (
	"math"
	"strings"
	"testing"
)

func TestPlotBreaksTheLineAtGapsAndDrawsALonePointAsADot(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name        string
		pts         []Point
		lines, dots int
	}{
		{"one stretch", []Point{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 3}}, 1, 0},
		{"a NaN between two stretches and a lone point", []Point{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: nan}, {X: 3, Y: 2}, {X: 4, Y: 1}, {X: 5, Y: nan}, {X: 6, Y: 3}}, 2, 1},
		{"a gap flag", []Point{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 5, Y: 2, Gap: true}, {X: 6, Y: 1}}, 2, 0},
		{"a gap before a last lone point", []Point{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 5, Y: 2, Gap: true}}, 1, 1},
		{"infinities break it too", []Point{{X: 0, Y: 1}, {X: 1, Y: math.Inf(1)}, {X: 2, Y: 2}}, 0, 2},
		{"a gap on the first point changes nothing", []Point{{X: 0, Y: 1, Gap: true}, {X: 1, Y: 2}}, 1, 0},
		{"nothing to draw", []Point{{X: 0, Y: nan}}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cv := New(100, 100)
			cv.Plot(Panel{W: 100, H: 100, X1: 10}, Linear(0, 4, nil), Series{Points: c.pts, Color: "red", Width: 2})
			svg := cv.String()
			if got := strings.Count(svg, "<polyline"); got != c.lines {
				t.Errorf("%d lines, want %d: %s", got, c.lines, svg)
			}
			if got := strings.Count(svg, "<circle"); got != c.dots {
				t.Errorf("%d dots, want %d: %s", got, c.dots, svg)
			}
			if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
				t.Errorf("a non-finite number was written: %s", svg)
			}
		})
	}
}

func TestPlotWritesAStretchAsOnePolyline(t *testing.T) {
	cv := New(100, 100)
	p := Panel{X: 10, Y: 10, W: 80, H: 80, X1: 4}
	cv.Plot(p, Linear(0, 1, nil), Series{Points: []Point{{X: 0, Y: 0}, {X: 2, Y: 1}, {X: 4, Y: 0.5}, {X: 5, Y: math.NaN()}, {X: 3, Y: 0.25, Gap: true}}, Color: "#123456", Width: 1.8, Dash: "4 2"})
	want := `<polyline fill="none" stroke="#123456" stroke-width="1.8" stroke-linejoin="round" stroke-dasharray="4 2" points="10,90 50,10 90,50"/>` +
		`<circle cx="70" cy="70" r="2.5" fill="#123456"/>`
	if got := cv.String(); !strings.Contains(got, want) {
		t.Errorf("got %s\nwant it to contain %s", got, want)
	}
}
