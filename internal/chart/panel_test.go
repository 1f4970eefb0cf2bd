package chart

import (
	"math"
	"strings"
	"testing"
)

func TestTickStepGivesAboutFiveTicks(t *testing.T) {
	for _, c := range []struct{ span, want float64 }{
		{3, 1}, {6, 1}, {7, 2}, {12, 2}, {20, 5}, {30, 5}, {45, 10}, {60, 10},
		{90, 15}, {120, 20}, {180, 30}, {300, 60}, {3600, 600}, {6 * 3600, 3600}, {12 * 3600, 7200},
	} {
		if got := TickStep(c.span); got != c.want {
			t.Errorf("TickStep(%v) = %v, want %v", c.span, got, c.want)
		}
	}
}

func TestPanelPXMapsItsRangeOntoItsWidth(t *testing.T) {
	p := Panel{X: 50, W: 200, X0: 10, X1: 20}
	for _, c := range []struct{ x, want float64 }{{10, 50}, {20, 250}, {15, 150}, {25, 350}} {
		if got := p.PX(c.x); got != c.want {
			t.Errorf("PX(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := (Panel{X: 50, W: 200}).PX(3); got != 50 {
		t.Errorf("a panel without a range puts x at %v, want its left edge", got)
	}
}

func TestXTicksFallOnMultiplesOfTheStep(t *testing.T) {
	c := New(300, 100)
	// A sliding window that does not start on a tick: 60 s wide, steps of 10 s.
	c.XTicks(Panel{W: 300, H: 80, X0: 1003, X1: 1063}, nil, TickStyle{})
	var got []string
	for _, s := range strings.Split(c.String(), "<text")[1:] {
		got = append(got, s[strings.Index(s, ">")+1:strings.Index(s, "<")])
	}
	if want := "1010 1020 1030 1040 1050 1060"; strings.Join(got, " ") != want {
		t.Errorf("ticks at %v, want %s", got, want)
	}
}

func TestShadeIsCutToThePanel(t *testing.T) {
	p := Panel{X: 10, Y: 5, W: 100, H: 40, X1: 10}
	for _, c := range []struct {
		name   string
		x0, x1 float64
		want   string
	}{
		{"inside", 2, 5, `<rect x="30" y="5" width="30" height="40" fill="red"/>`},
		{"past the end", 8, 15, `<rect x="90" y="5" width="20" height="40" fill="red"/>`},
		{"before the start", -5, 1, `<rect x="10" y="5" width="10" height="40" fill="red"/>`},
		{"empty", 5, 5, ""},
		{"reversed", 6, 4, ""},
		{"outside", 12, 20, ""},
		{"not a number", math.NaN(), 4, ""},
	} {
		c2 := New(120, 50)
		before := c2.String()
		c2.Shade(p, c.x0, c.x1, Style{Fill: "red"})
		if got := strings.TrimSuffix(strings.TrimPrefix(c2.String(), strings.TrimSuffix(before, "</svg>")), "</svg>"); got != c.want {
			t.Errorf("%s: drew %q, want %q", c.name, got, c.want)
		}
	}
}
