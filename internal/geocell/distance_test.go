package geocell

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDistanceM(t *testing.T) {
	tests := []struct {
		name                   string
		lat1, lng1, lat2, lng2 float64
		want, tolerance        float64
	}{
		{"same point", 1.3, 103.8, 1.3, 103.8, 0, 0},
		{"one degree of latitude", 0, 0, 1, 0, 111195, 1},
		{"london to paris", 51.5074, -0.1278, 48.8566, 2.3522, 343_560, 500},
		{"across the antimeridian", 0, 179.5, 0, -179.5, 111195, 1},
		{"pole to pole", 90, 0, -90, 0, math.Pi * EarthRadiusM, 1},
		{"antipodes", 0, 0, 0, 180, math.Pi * EarthRadiusM, 1},
	}
	for _, tt := range tests {
		got := DistanceM(tt.lat1, tt.lng1, tt.lat2, tt.lng2)
		if math.Abs(got-tt.want) > tt.tolerance {
			t.Errorf("%s: DistanceM = %.1f, want %.1f ± %.0f", tt.name, got, tt.want, tt.tolerance)
		}
	}
}

// distanceToBoxM must equal the minimum over the box, which dense sampling
// of the boundary approximates from above.
func TestDistanceToBoxMatchesSampling(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		bits := 6 + uint(rng.IntN(20))
		c, _ := Of(rng.Float64()*180-90, rng.Float64()*360-180, bits)
		b := c.Bounds()
		lat, lng := rng.Float64()*180-90, rng.Float64()*360-180
		if i%2 == 0 { // half the points close to the box, where it matters
			clat, clng := b.Center()
			lat = min(max(clat+(rng.Float64()-0.5)*4*(b.MaxLat-b.MinLat), -90), 90)
			lng = clng + (rng.Float64()-0.5)*4*(b.MaxLng-b.MinLng)
			lng = math.Mod(lng+540, 360) - 180
		}
		got := distanceToBoxM(lat, lng, b)
		sampled := math.Inf(1)
		const n = 400
		for k := 0; k <= n; k++ {
			f := float64(k) / n
			la := b.MinLat + f*(b.MaxLat-b.MinLat)
			ln := b.MinLng + f*(b.MaxLng-b.MinLng)
			sampled = min(sampled,
				DistanceM(lat, lng, b.MinLat, ln), DistanceM(lat, lng, b.MaxLat, ln),
				DistanceM(lat, lng, la, b.MinLng), DistanceM(lat, lng, la, b.MaxLng))
		}
		if b.Contains(lat, lng) {
			sampled = 0
		}
		// Sampling error: half a step along the longest edge.
		step := DistanceM(b.MinLat, b.MinLng, b.MaxLat, b.MaxLng) / n
		if got > sampled+1e-6 || got < sampled-step {
			t.Fatalf("distanceToBoxM(%v, %v, %+v) = %.3f, sampled minimum %.3f (step %.3f)", lat, lng, b, got, sampled, step)
		}
	}
}

func TestNearestLng(t *testing.T) {
	tests := []struct{ lng, lo, hi, want float64 }{
		{5, 0, 10, 5},
		{-5, 0, 10, 0},
		{15, 0, 10, 10},
		{-175, 170, 180, 180}, // closer going east across 180
		{175, -180, -170, -180},
		{-90, 0, 10, 0},
	}
	for _, tt := range tests {
		if got := nearestLng(tt.lng, tt.lo, tt.hi); got != tt.want {
			t.Errorf("nearestLng(%v, %v, %v) = %v, want %v", tt.lng, tt.lo, tt.hi, got, tt.want)
		}
	}
}
