package chart

import (
	"math"
	"strconv"
)

// Axis maps a value to a height in a panel, Lo at the bottom and Hi at
// the top; Log spaces decades evenly. Ticks are where YGrid draws its
// lines, Label how it writes them (the shortest decimal when nil).
type Axis struct {
	Lo, Hi float64
	Log    bool
	Ticks  []float64
	Label  func(v float64) string
}

// Linear is an axis from lo to hi with ticks at both ends and the middle:
// three lines are enough to read a small chart by. For a top a reader can
// take in at once, pass hi = NiceCeil(the largest value). An empty range
// becomes [lo, lo+1], so that every value still has a place.
func Linear(lo, hi float64, label func(float64) string) Axis {
	if !(hi > lo) {
		hi = lo + 1
	}
	return Axis{Lo: lo, Hi: hi, Ticks: []float64{lo, (lo + hi) / 2, hi}, Label: label}
}

// LogDecades is a logarithmic axis from the decade at or below the
// smallest value to the decade at or above the largest, ticked at every
// decade: for latencies, where the point is the jump from milliseconds to
// seconds that a linear axis flattens. Values that are not positive and
// finite have no place on it and are ignored; without any, it spans 1–10.
func LogDecades(values []float64, label func(float64) string) Axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if positive(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		lo, hi = 1, 10
	} else {
		lo = math.Pow(10, math.Floor(math.Log10(lo)))
		hi = math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
	}
	var ticks []float64
	for v := lo; v <= hi*1.0001; v *= 10 {
		ticks = append(ticks, v)
	}
	return Axis{Lo: lo, Hi: hi, Log: true, Ticks: ticks, Label: label}
}

// NiceCeil rounds v up to 1, 2 or 5 times a power of ten; it is 1 for a v
// that is not positive and finite.
func NiceCeil(v float64) float64 {
	if !positive(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// Frac is where v lies from Lo (0) to Hi (1), held to that range so that
// an outlier is drawn at the edge rather than over the next panel. An axis
// without a range puts everything at 0.
func (a Axis) Frac(v float64) float64 {
	lo, hi := a.Lo, a.Hi
	if a.Log {
		v = math.Log10(math.Max(v, a.Lo))
		lo, hi = math.Log10(lo), math.Log10(hi)
	}
	d := hi - lo
	if !positive(d) {
		return 0
	}
	return math.Min(math.Max((v-lo)/d, 0), 1)
}

// PY is the y pixel of v in p.
func (a Axis) PY(p Panel, v float64) float64 {
	return p.Y + (1-a.Frac(v))*p.H
}

func (a Axis) label(v float64) string {
	if a.Label == nil {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return a.Label(v)
}

// positive is true for a finite v > 0 (NaN is neither).
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }
