package geocell

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// MaxCellsWithin bounds the candidate cells CellsWithin will examine, so a
// radius far larger than the cell size fails fast instead of allocating
// millions of cells.
const MaxCellsWithin = 1024

// CellsWithin returns the cells of the given precision that a circle of
// radiusM metres around (lat, lng) overlaps: always the cell containing the
// centre, first, then every other cell whose nearest point is within the
// radius, nearest first (ties by hash). Overlap is decided exactly on a
// sphere, across the 180th meridian and over the poles.
//
// Spampede sums counters over these cells so a hotspot straddling a cell
// edge still trips; dispatch walks them to find drivers near a pickup.
// It fails with ErrTooManyCells when the circle's bounding box spans more
// than MaxCellsWithin cells; use fewer bits for large radii.
func CellsWithin(lat, lng, radiusM float64, bits uint) ([]Cell, error) {
	centre, err := Of(lat, lng, bits)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(radiusM) || math.IsInf(radiusM, 0) || radiusM < 0 {
		return nil, invalidf("radius must be a finite number of metres >= 0")
	}
	rowLo, rowHi, colLo, colHi := candidateRange(lat, lng, radiusM, bits)
	if n := (rowHi - rowLo + 1) * (colHi - colLo + 1); n > MaxCellsWithin {
		return nil, &argError{
			msg:  fmt.Sprintf("radius %.0f m spans %d cells at %d bits, more than %d", radiusM, n, bits, MaxCellsWithin),
			kind: ErrTooManyCells,
		}
	}

	type hit struct {
		cell Cell
		dist float64
	}
	hits := []hit{{cell: centre}}
	cols := int64(1) << lngBits(bits)
	for row := rowLo; row <= rowHi; row++ {
		for col := colLo; col <= colHi; col++ {
			c := cellAt(bits, uint64(row), uint64((col%cols+cols)%cols))
			if c == centre {
				continue
			}
			if d := distanceToBoxM(lat, lng, c.Bounds()); d <= radiusM {
				hits = append(hits, hit{cell: c, dist: d})
			}
		}
	}
	slices.SortFunc(hits[1:], func(a, b hit) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.cell.hash, b.cell.hash))
	})
	out := make([]Cell, len(hits))
	for i, h := range hits {
		out[i] = h.cell
	}
	return out, nil
}

// candidateRange returns the rows and (unwrapped) columns of a box around
// the circle, one cell wider on each side so floating-point error at the
// edges cannot drop a cell; the exact distance test then filters.
func candidateRange(lat, lng, radiusM float64, bits uint) (rowLo, rowHi, colLo, colHi int64) {
	rows, cols := int64(1)<<latBits(bits), int64(1)<<lngBits(bits)
	delta := deg(radiusM / EarthRadiusM) // angular radius
	// Clamp before converting to indices: a huge radius must not overflow.
	latLo, latHi := max(lat-delta, -90), min(lat+delta, 90)

	rowLo = max(int64(math.Floor((latLo+90)/180*float64(rows)))-1, 0)
	rowHi = min(int64(math.Floor((latHi+90)/180*float64(rows)))+1, rows-1)

	// A circle reaching a pole covers every longitude. Otherwise its
	// longitude half-width is asin(sin δ / cos φ) (the tangent meridians).
	if latLo <= -90 || latHi >= 90 {
		return rowLo, rowHi, 0, cols - 1
	}
	s := math.Sin(rad(delta)) / math.Cos(rad(lat))
	if s >= 1 {
		return rowLo, rowHi, 0, cols - 1
	}
	dLng := deg(math.Asin(s))
	colLo = int64(math.Floor((lng-dLng+180)/360*float64(cols))) - 1
	colHi = int64(math.Floor((lng+dLng+180)/360*float64(cols))) + 1
	if colHi-colLo+1 >= cols {
		return rowLo, rowHi, 0, cols - 1
	}
	return rowLo, rowHi, colLo, colHi
}
