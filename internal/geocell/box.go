package geocell

import "github.com/mmcloughlin/geohash"

// Box is a latitude/longitude rectangle in degrees. Cell boxes never cross
// the 180th meridian.
type Box struct {
	MinLat, MaxLat float64
	MinLng, MaxLng float64
}

// Contains reports whether (lat, lng) lies in b, edges included, so a point
// on a shared edge is in both cells.
func (b Box) Contains(lat, lng float64) bool {
	return b.MinLat <= lat && lat <= b.MaxLat && b.MinLng <= lng && lng <= b.MaxLng
}

// Center returns the middle of b.
func (b Box) Center() (lat, lng float64) {
	return (b.MinLat + b.MaxLat) / 2, (b.MinLng + b.MaxLng) / 2
}

// Bounds returns the rectangle the cell covers. The edges are exact.
func (c Cell) Bounds() Box {
	b := geohash.BoundingBoxIntWithPrecision(c.hash, c.bits)
	return Box{MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng}
}

// Center returns the middle of the cell.
func (c Cell) Center() (lat, lng float64) {
	return c.Bounds().Center()
}
