package chart

import "math"

// Box is an area of the map, such as a geohash cell, in degrees.
type Box struct{ MinLat, MaxLat, MinLng, MaxLng float64 }

// Proj is an equirectangular projection, north up, that fits a set of
// boxes: at a city's scale, scaling longitude by the cosine of the middle
// latitude keeps cells their true shape.
type Proj struct {
	minLat, maxLat, minLng, maxLng float64
	cos, k, pad                    float64
}

// FitBoxes projects boxes so that their extent's longer side is side
// pixels, inside a margin of pad pixels. ok is false when there is nothing
// to fit: no boxes, or an extent without width or height.
func FitBoxes(boxes []Box, side, pad float64) (p Proj, ok bool) {
	p = Proj{minLat: math.Inf(1), maxLat: math.Inf(-1), minLng: math.Inf(1), maxLng: math.Inf(-1), pad: pad}
	for _, b := range boxes {
		p.minLat, p.maxLat = math.Min(p.minLat, b.MinLat), math.Max(p.maxLat, b.MaxLat)
		p.minLng, p.maxLng = math.Min(p.minLng, b.MinLng), math.Max(p.maxLng, b.MaxLng)
	}
	p.cos = math.Cos((p.minLat + p.maxLat) / 2 * math.Pi / 180)
	w, h := (p.maxLng-p.minLng)*p.cos, p.maxLat-p.minLat
	if !positive(w) || !positive(h) || !positive(side) {
		return p, false
	}
	p.k = side / math.Max(w, h)
	return p, true
}

// X is the x pixel of a longitude.
func (p Proj) X(lng float64) float64 { return p.pad + (lng-p.minLng)*p.cos*p.k }

// Y is the y pixel of a latitude, north up.
func (p Proj) Y(lat float64) float64 { return p.pad + (p.maxLat-lat)*p.k }

// DX is the width in pixels of dLng degrees of longitude, for a radius.
func (p Proj) DX(dLng float64) float64 { return dLng * p.cos * p.k }

// DY is the height in pixels of dLat degrees of latitude.
func (p Proj) DY(dLat float64) float64 { return dLat * p.k }

// Width is the picture's width with both margins.
func (p Proj) Width() float64 { return 2*p.pad + (p.maxLng-p.minLng)*p.cos*p.k }

// Height is the picture's height with both margins.
func (p Proj) Height() float64 { return 2*p.pad + (p.maxLat-p.minLat)*p.k }
