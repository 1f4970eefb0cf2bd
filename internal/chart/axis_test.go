package chart

import (
	"math"
	"slices"
	"testing"
)

func TestLogDecadesSpansWholeDecadesAroundTheValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float64
		lo, hi float64
		ticks  []float64
	}{
		{"no values", nil, 1, 10, []float64{1, 10}},
		{"milliseconds to seconds", []float64{3, 12, 450}, 1, 1000, []float64{1, 10, 100, 1000}},
		{"one value on a decade", []float64{10}, 10, 100, []float64{10, 100}},
		{"values on decades", []float64{10, 1000}, 10, 1000, []float64{10, 100, 1000}},
		{"below a millisecond", []float64{0.2, 0.7}, 0.1, 1, []float64{0.1, 1}},
		{"unplottable values ignored", []float64{-5, 0, math.NaN(), math.Inf(1), 20}, 10, 100, []float64{10, 100}},
		{"only unplottable values", []float64{0, math.NaN()}, 1, 10, []float64{1, 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := LogDecades(c.values, Ms)
			if !a.Log || a.Lo != c.lo || a.Hi != c.hi {
				t.Errorf("axis = %v–%v (log %v), want %v–%v (log)", a.Lo, a.Hi, a.Log, c.lo, c.hi)
			}
			if !slices.EqualFunc(a.Ticks, c.ticks, func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*y }) {
				t.Errorf("ticks = %v, want %v", a.Ticks, c.ticks)
			}
		})
	}
}

func TestNiceCeilRoundsUpToOneTwoOrFive(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{
		{1, 1}, {1.01, 2}, {2, 2}, {3, 5}, {5, 5}, {7, 10}, {10, 10},
		{150, 200}, {200, 200}, {201, 500}, {0.03, 0.05}, {0.007, 0.01},
		{0, 1}, {-3, 1}, {math.NaN(), 1}, {math.Inf(1), 1},
	} {
		if got := NiceCeil(c.v); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("NiceCeil(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestLinearTicksBothEndsAndTheMiddle(t *testing.T) {
	for _, c := range []struct {
		name   string
		lo, hi float64
		ticks  []float64
	}{
		{"share", 0, 1, []float64{0, 0.5, 1}},
		{"nice top", 0, NiceCeil(170), []float64{0, 100, 200}},
		{"offset", 10, 20, []float64{10, 15, 20}},
		{"empty range", 5, 5, []float64{5, 5.5, 6}},
		{"reversed range", 5, 1, []float64{5, 5.5, 6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Linear(c.lo, c.hi, nil).Ticks; !slices.Equal(got, c.ticks) {
				t.Errorf("ticks = %v, want %v", got, c.ticks)
			}
		})
	}
}

func TestAxisPYPutsLoAtTheBottomAndHoldsOutliersToThePanel(t *testing.T) {
	p := Panel{Y: 100, H: 50}
	lin, log := Linear(0, 10, nil), LogDecades([]float64{1, 1000}, nil)
	for _, c := range []struct {
		name string
		a    Axis
		v    float64
		want float64
	}{
		{"linear bottom", lin, 0, 150},
		{"linear top", lin, 10, 100},
		{"linear middle", lin, 5, 125},
		{"above the top", lin, 99, 100},
		{"below the bottom", lin, -4, 150},
		{"log middle decade", log, 10, 150 - 50.0/3},
		{"log zero at the bottom", log, 0, 150},
		{"no range", Axis{Lo: 3, Hi: 3}, 3, 150},
		{"log without a positive bottom", Axis{Lo: 0, Hi: 10, Log: true}, 5, 150},
	} {
		if got := c.a.PY(p, c.v); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: PY(%v) = %v, want %v", c.name, c.v, got, c.want)
		}
	}
}

func TestLabelsFormatMillisecondsAndShares(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Ms(0.5), "0.5 ms"}, {Ms(12), "12 ms"}, {Ms(999), "999 ms"}, {Ms(1000), "1 s"}, {Ms(1500), "1.5 s"}, {Ms(10000), "10 s"},
		{Percent(0), "0%"}, {Percent(0.5), "50%"}, {Percent(1), "100%"}, {Percent(0.987), "99%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
