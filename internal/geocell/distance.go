package geocell

import "math"

// EarthRadiusM is the mean Earth radius (IUGG) used for all distances here.
// A sphere is within 0.5% of the ellipsoid, plenty for "which cells are
// near" and for ranking drivers.
const EarthRadiusM = 6371008.8

// DistanceM returns the great-circle (haversine) distance in metres between
// two points given in degrees.
func DistanceM(lat1, lng1, lat2, lng2 float64) float64 {
	return EarthRadiusM * angle(rad(lat1), rad(lng1), rad(lat2), rad(lng2))
}

// angle is the central angle in radians between two points in radians.
func angle(lat1, lng1, lat2, lng2 float64) float64 {
	sLat := math.Sin((lat2 - lat1) / 2)
	sLng := math.Sin((lng2 - lng1) / 2)
	h := sLat*sLat + math.Cos(lat1)*math.Cos(lat2)*sLng*sLng
	return 2 * math.Asin(math.Sqrt(min(max(h, 0), 1)))
}

func rad(deg float64) float64 { return deg * math.Pi / 180 }
func deg(rad float64) float64 { return rad * 180 / math.Pi }

// distanceToBoxM returns the great-circle distance in metres from (lat, lng)
// to the nearest point of b, 0 if b contains it.
//
// The nearest point lies on b's boundary. Along a parallel edge the
// distance only grows with the longitude gap, so the nearest point there is
// at the nearest longitude. Along a meridian edge cos(distance) is
// C·cos(φ − φ*) with φ* = atan2(sin φp, cos φp · cos Δλ), so the nearest
// point is φ* clamped to the edge, or one of its ends. Checking those six
// points and the four corners is exact on the sphere.
func distanceToBoxM(lat, lng float64, b Box) float64 {
	if b.Contains(lat, lng) {
		return 0
	}
	pLat, pLng := rad(lat), rad(lng)
	best := math.Inf(1)
	try := func(latDeg, lngDeg float64) {
		best = min(best, angle(pLat, pLng, rad(latDeg), rad(lngDeg)))
	}
	nearLng := nearestLng(lng, b.MinLng, b.MaxLng)
	try(b.MinLat, nearLng)
	try(b.MaxLat, nearLng)
	for _, edgeLng := range [2]float64{b.MinLng, b.MaxLng} {
		try(b.MinLat, edgeLng)
		try(b.MaxLat, edgeLng)
		dLng := rad(edgeLng) - pLng
		star := deg(math.Atan2(math.Sin(pLat), math.Cos(pLat)*math.Cos(dLng)))
		try(min(max(star, b.MinLat), b.MaxLat), edgeLng)
	}
	return EarthRadiusM * best
}

// nearestLng returns the longitude in [lo, hi] closest to lng, going either
// way around the globe.
func nearestLng(lng, lo, hi float64) float64 {
	if lo <= lng && lng <= hi {
		return lng
	}
	if lngGap(lng, lo) <= lngGap(lng, hi) {
		return lo
	}
	return hi
}

// lngGap is the absolute longitude difference in degrees, in [0, 180].
func lngGap(a, b float64) float64 {
	d := math.Mod(math.Abs(a-b), 360)
	return min(d, 360-d)
}
