package geocell

// A cell of b bits is the intersection of row (latitude index, floor(b/2)
// bits) and column (longitude index, ceil(b/2) bits). Walking the grid in
// these integer coordinates is exact, whereas stepping by floating-point
// offsets (as geohash.NeighborsIntWithPrecision does) wraps from one pole to
// the other and can land on the wrong side of an edge.

func latBits(bits uint) uint { return bits / 2 }
func lngBits(bits uint) uint { return bits - bits/2 }

// rowCol splits a cell into its latitude row and longitude column.
func (c Cell) rowCol() (row, col uint64) {
	full := c.hash << (64 - c.bits) // longitude bit is the top bit
	return squash(full) >> (32 - latBits(c.bits)), squash(full>>1) >> (32 - lngBits(c.bits))
}

// cellAt is the inverse of rowCol. row and col must be in range.
func cellAt(bits uint, row, col uint64) Cell {
	full := spread(row<<(32-latBits(bits))) | spread(col<<(32-lngBits(bits)))<<1
	return Cell{bits: bits, hash: full >> (64 - bits)}
}

// spread moves the low 32 bits of x to the even bit positions.
func spread(x uint64) uint64 {
	x &= 0xffffffff
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squash gathers the even bit positions of x into the low 32 bits.
func squash(x uint64) uint64 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0f0f0f0f0f0f0f0f
	x = (x | x>>4) & 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	x = (x | x>>16) & 0x00000000ffffffff
	return x
}
