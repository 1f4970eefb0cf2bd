package chart_test

import (
	"fmt"
	"math"

	"github.com/apollo-platform/apollo/internal/chart"
)

// A panel of one minute of p99 latencies on a log axis, with a second
// that had no requests (NaN) breaking the line.
func ExampleSVG_Plot() {
	c := chart.New(200, 100)
	p := chart.Panel{X: 40, Y: 10, W: 150, H: 60, X0: 0, X1: 60}
	p99 := []float64{12, 15, math.NaN(), 900, 40}
	a := chart.LogDecades(p99, chart.Ms)
	s := chart.Series{Color: "#e6550d", Width: 1.8}
	for i, v := range p99 {
		s.Points = append(s.Points, chart.Point{X: float64(i*10) + 5, Y: v})
	}
	c.Frame(p, "#999")
	c.Plot(p, a, s)
	fmt.Println(a.Ticks)
	fmt.Println(c)
	// Output:
	// [10 100 1000]
	// <svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" viewBox="0 0 200 100" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/><rect x="40" y="10" width="150" height="60" fill="none" stroke="#999"/><polyline fill="none" stroke="#e6550d" stroke-width="1.8" stroke-linejoin="round" points="52.5,67.6 77.5,64.7"/><polyline fill="none" stroke="#e6550d" stroke-width="1.8" stroke-linejoin="round" points="127.5,11.4 152.5,51.9"/></svg>
}

// A cell of a map, with a tooltip and an attribute a page's script can
// find it by.
func ExampleFitBoxes() {
	cell := chart.Box{MinLat: 1.2775, MaxLat: 1.2825, MinLng: 103.8475, MaxLng: 103.8525}
	p, ok := chart.FitBoxes([]chart.Box{cell}, 100, 5)
	if !ok {
		return
	}
	c := chart.New(p.Width(), p.Height())
	c.Group("cell u4pruy: 12 requested", chart.Attr{Name: "data-cell", Value: "u4pruy"})
	c.Rect(p.X(cell.MinLng), p.Y(cell.MaxLat), p.DX(cell.MaxLng-cell.MinLng), p.DY(cell.MaxLat-cell.MinLat), chart.Style{Fill: "#eb9696", Stroke: "#bbb"})
	c.End()
	fmt.Println(c)
	// Output:
	// <svg xmlns="http://www.w3.org/2000/svg" width="110" height="110" viewBox="0 0 110 110" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/><g data-cell="u4pruy"><title>cell u4pruy: 12 requested</title><rect x="5" y="5" width="100" height="100" fill="#eb9696" stroke="#bbb"/></g></svg>
}
