package geocell

import (
	"math"
	"strconv"
	"strings"

	"github.com/mmcloughlin/geohash"
)

// Precision limits for a Cell, in bits. See the package doc for why 52.
const (
	MinBits uint = 1
	MaxBits uint = 52
)

// Cell is an integer geohash at a given precision. The zero Cell is not a
// valid cell; valid cells come from Of, FromHash, ParseCell or methods of
// other valid cells. Cells are comparable and can be map keys.
type Cell struct {
	bits uint
	hash uint64
}

// Of returns the cell of the given precision that contains (lat, lng).
// Coordinates must be finite with lat in [-90, 90] and lng in [-180, 180];
// bits must be in [MinBits, MaxBits], odd or even (see the package doc).
// The returned cell's Bounds always contain the point: a point on the north
// pole or on the 180th meridian lies in the northernmost or easternmost cell.
func Of(lat, lng float64, bits uint) (Cell, error) {
	if err := validateBits(bits); err != nil {
		return Cell{}, err
	}
	if err := validatePoint(lat, lng); err != nil {
		return Cell{}, err
	}
	// The library maps lat 90 and lng 180 one past the last cell (its
	// assembly path even returns garbage), so encode just inside the edge.
	encLat, encLng := math.Min(lat, maxEncodeLat), math.Min(lng, maxEncodeLng)
	c := Cell{bits: bits, hash: geohash.EncodeIntWithPrecision(encLat, encLng, bits)}
	return c.nudge(lat, lng), nil
}

// Far less than the smallest cell (2.7e-6 degrees at 52 bits), far more than
// the encoder's rounding error.
const (
	maxEncodeLat = 90 - 1e-9
	maxEncodeLng = 180 - 1e-9
)

// nudge moves c one row or column when the library's floating-point encoder
// put a point lying within rounding error of an edge on the wrong side of it.
// The bounds are exact (dyadic fractions of 180 and 360), the encoder is not.
func (c Cell) nudge(lat, lng float64) Cell {
	b := c.Bounds()
	row, col := c.rowCol()
	moved := false
	switch {
	case lat < b.MinLat:
		row, moved = row-1, true
	case lat > b.MaxLat:
		row, moved = row+1, true
	}
	switch {
	case lng < b.MinLng:
		col, moved = col-1, true
	case lng > b.MaxLng:
		col, moved = col+1, true
	}
	if !moved {
		return c
	}
	return cellAt(c.bits, row, col)
}

// FromHash returns the cell with the given integer geohash and precision,
// for hashes read back from storage. hash must be below 2^bits.
func FromHash(hash uint64, bits uint) (Cell, error) {
	if err := validateBits(bits); err != nil {
		return Cell{}, err
	}
	if hash>>bits != 0 {
		return Cell{}, invalidf("hash %d does not fit in %d bits", hash, bits)
	}
	return Cell{bits: bits, hash: hash}, nil
}

// Bits is the cell's precision.
func (c Cell) Bits() uint { return c.bits }

// Hash is the cell's integer geohash, in [0, 2^Bits).
func (c Cell) Hash() uint64 { return c.hash }

// Reduce returns the cell of lower precision that contains c, by dropping
// low bits. bits above c.Bits() leave c unchanged (precision cannot be
// invented) and bits below MinBits are treated as MinBits, so Reduce never
// fails and c.Reduce(a).Reduce(b) == c.Reduce(min(a, b)).
func (c Cell) Reduce(bits uint) Cell {
	if bits >= c.bits {
		return c
	}
	bits = max(bits, MinBits)
	return Cell{bits: bits, hash: c.hash >> (c.bits - bits)}
}

// String returns the stable text form "bits:hash" in decimal, e.g.
// "30:1011294547". It is used in Redis keys, so it must never change.
func (c Cell) String() string {
	return string(c.AppendText(nil))
}

// AppendText appends the String form to b; it lets key builders avoid an
// allocation.
func (c Cell) AppendText(b []byte) []byte {
	b = strconv.AppendUint(b, uint64(c.bits), 10)
	b = append(b, ':')
	return strconv.AppendUint(b, c.hash, 10)
}

// MarshalText implements encoding.TextMarshaler with the String form.
func (c Cell) MarshalText() ([]byte, error) { return c.AppendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseCell.
func (c *Cell) UnmarshalText(text []byte) error {
	parsed, err := ParseCell(string(text))
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}

// ParseCell parses the String form. Only the canonical form is accepted (no
// signs, spaces or leading zeros), so ParseCell(s).String() == s whenever
// ParseCell succeeds and two spellings never name one Redis key.
func ParseCell(s string) (Cell, error) {
	bitsText, hashText, ok := strings.Cut(s, ":")
	if !ok {
		return Cell{}, invalidf("cell %.40q must look like bits:hash", s)
	}
	bits, err := strconv.ParseUint(bitsText, 10, 8)
	if err != nil {
		return Cell{}, invalidf("cell %.40q: bits must be a decimal number", s)
	}
	hash, err := strconv.ParseUint(hashText, 10, 64)
	if err != nil {
		return Cell{}, invalidf("cell %.40q: hash must be a decimal number", s)
	}
	c, err := FromHash(hash, uint(bits))
	if err != nil {
		return Cell{}, err
	}
	if c.String() != s {
		return Cell{}, invalidf("cell %.40q is not in canonical form %q", s, c.String())
	}
	return c, nil
}

func validateBits(bits uint) error {
	if bits < MinBits || bits > MaxBits {
		return invalidf("bits must be within [%d, %d]", MinBits, MaxBits)
	}
	return nil
}

func validatePoint(lat, lng float64) error {
	switch {
	case math.IsNaN(lat) || math.IsInf(lat, 0):
		return invalidf("lat must be a finite number")
	case math.IsNaN(lng) || math.IsInf(lng, 0):
		return invalidf("lng must be a finite number")
	case lat < -90 || lat > 90:
		return invalidf("lat must be within [-90, 90]")
	case lng < -180 || lng > 180:
		return invalidf("lng must be within [-180, 180]")
	}
	return nil
}
