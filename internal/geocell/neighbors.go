package geocell

// Neighbors returns the cells around c in the order N, NE, E, SE, S, SW, W,
// NW, wrapping across the 180th meridian. Cells touching a pole have no
// neighbours beyond it, so they get 5; at 1 or 2 bits, where east and west
// are the same cell, duplicates are dropped. c itself is never included.
//
// It agrees with geohash.NeighborsIntWithPrecision everywhere except the
// polar rows, where that function wraps to the opposite pole.
func (c Cell) Neighbors() []Cell {
	if c.bits == 0 {
		return nil
	}
	row, col := c.rowCol()
	rows, cols := uint64(1)<<latBits(c.bits), uint64(1)<<lngBits(c.bits)
	steps := [...]struct{ dRow, dCol int }{
		{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1},
	}
	out := make([]Cell, 0, len(steps))
	for _, s := range steps {
		r := int64(row) + int64(s.dRow)
		if r < 0 || uint64(r) >= rows {
			continue
		}
		cl := (int64(col) + int64(s.dCol) + int64(cols)) % int64(cols)
		n := cellAt(c.bits, uint64(r), uint64(cl))
		if n != c && !containsCell(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func containsCell(cells []Cell, c Cell) bool {
	for _, x := range cells {
		if x == c {
			return true
		}
	}
	return false
}
