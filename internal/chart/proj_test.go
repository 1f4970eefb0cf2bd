package chart

import (
	"math"
	"testing"
)

func TestFitBoxesRefusesWhatHasNoExtent(t *testing.T) {
	cell := Box{MinLat: 1.27, MaxLat: 1.28, MinLng: 103.84, MaxLng: 103.85}
	for _, c := range []struct {
		name  string
		boxes []Box
		side  float64
	}{
		{"no boxes", nil, 560},
		{"a zero box", []Box{{}}, 560},
		{"a point", []Box{{MinLat: 1, MaxLat: 1, MinLng: 2, MaxLng: 2}}, 560},
		{"no width", []Box{{MinLat: 1, MaxLat: 2, MinLng: 3, MaxLng: 3}}, 560},
		{"no height", []Box{{MinLat: 1, MaxLat: 1, MinLng: 3, MaxLng: 4}}, 560},
		{"not a number", []Box{{MinLat: math.NaN(), MaxLat: 2, MinLng: 3, MaxLng: 4}}, 560},
		{"infinite", []Box{{MinLat: 1, MaxLat: 2, MinLng: 3, MaxLng: math.Inf(1)}}, 560},
		{"no room to draw in", []Box{cell}, 0},
	} {
		if _, ok := FitBoxes(c.boxes, c.side, 12); ok {
			t.Errorf("%s: projected", c.name)
		}
	}
	if _, ok := FitBoxes([]Box{cell}, 560, 12); !ok {
		t.Error("a real cell was refused")
	}
}

func TestFitBoxesIsNorthUpAndKeepsCellsTheirShape(t *testing.T) {
	const lat = 60.0 // where a degree of longitude is half a degree of latitude
	// Two cells side by side, each 0.01° of latitude by 0.02° of longitude:
	// square on the ground.
	west := Box{MinLat: lat, MaxLat: lat + 0.01, MinLng: 10, MaxLng: 10.02}
	east := Box{MinLat: lat, MaxLat: lat + 0.01, MinLng: 10.02, MaxLng: 10.04}
	p, ok := FitBoxes([]Box{west, east}, 500, 10)
	if !ok {
		t.Fatal("not projected")
	}
	if p.Y(west.MaxLat) >= p.Y(west.MinLat) {
		t.Error("north is not up")
	}
	if p.X(east.MinLng) <= p.X(west.MinLng) {
		t.Error("east is not right")
	}
	w, h := p.X(west.MaxLng)-p.X(west.MinLng), p.Y(west.MinLat)-p.Y(west.MaxLat)
	if math.Abs(w-h) > 0.01*h {
		t.Errorf("a square cell is drawn %.1f × %.1f px", w, h)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"the longer side fills side", p.X(east.MaxLng) - p.X(west.MinLng), 500},
		{"the margin", p.X(west.MinLng), 10},
		{"the top margin", p.Y(west.MaxLat), 10},
		{"width with margins", p.Width(), 520},
		{"height with margins", p.Height(), 270},
		{"a longitude span", p.DX(0.02), w},
		{"a latitude span", p.DY(0.01), h},
	} {
		if math.Abs(c.got-c.want) > 0.5 {
			t.Errorf("%s = %.2f, want %.2f", c.name, c.got, c.want)
		}
	}
}
