package geocell

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// destination returns the point distM metres from (lat, lng) on the
// initial bearing (radians), in degrees.
func destination(lat, lng, bearing, distM float64) (float64, float64) {
	p, l, d := rad(lat), rad(lng), distM/EarthRadiusM
	lat2 := math.Asin(math.Sin(p)*math.Cos(d) + math.Cos(p)*math.Sin(d)*math.Cos(bearing))
	lng2 := l + math.Atan2(math.Sin(bearing)*math.Sin(d)*math.Cos(p), math.Cos(d)-math.Sin(p)*math.Sin(lat2))
	return min(max(deg(lat2), -90), 90), math.Mod(deg(lng2)+540, 360) - 180
}

func TestCellsWithinCoversTheCircle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for checked < 300 {
		bits := 20 + uint(rng.IntN(17)) // 20..36: 20 km down to 80 m cells
		lat, lng := rng.Float64()*170-85, rng.Float64()*360-180
		if checked%4 == 0 {
			lng = 180 - rng.Float64()*0.05 // near the antimeridian
		}
		c, _ := Of(lat, lng, bits)
		b := c.Bounds()
		cellM := DistanceM(b.MinLat, b.MinLng, b.MaxLat, b.MaxLng)
		radius := rng.Float64() * 2 * cellM
		cells, err := CellsWithin(lat, lng, radius, bits)
		if errors.Is(err, ErrTooManyCells) {
			continue
		}
		if err != nil {
			t.Fatalf("CellsWithin(%v, %v, %v, %d): %v", lat, lng, radius, bits, err)
		}
		checked++
		if cells[0] != c {
			t.Fatalf("CellsWithin(%v, %v, %v, %d)[0] = %v, want the centre cell %v", lat, lng, radius, bits, cells[0], c)
		}
		set := map[Cell]bool{}
		for _, x := range cells {
			if set[x] {
				t.Fatalf("duplicate cell %v in %v", x, cells)
			}
			set[x] = true
			if d := distanceToBoxM(lat, lng, x.Bounds()); d > radius {
				t.Fatalf("cell %v is %.1f m away, beyond radius %.1f", x, d, radius)
			}
		}
		for range 200 {
			plat, plng := destination(lat, lng, rng.Float64()*2*math.Pi, rng.Float64()*radius*0.999)
			p, _ := Of(plat, plng, bits)
			if !set[p] {
				t.Fatalf("CellsWithin(%v, %v, %.1f, %d) = %v: misses %v containing (%v, %v)",
					lat, lng, radius, bits, cells, p, plat, plng)
			}
		}
	}
}

func TestCellsWithin(t *testing.T) {
	c, _ := Of(1.3521, 103.8198, 30)
	b := c.Bounds()
	midLat, _ := b.Center()
	// A point 10 m inside the east edge of its cell.
	eastLng := b.MaxLng - 10/(EarthRadiusM*math.Cos(rad(midLat)))*180/math.Pi
	east, _ := Of(midLat, b.MaxLng+1e-9, 30)

	tests := []struct {
		name     string
		lat, lng float64
		radius   float64
		want     []Cell
	}{
		{"radius zero is the centre cell", midLat, eastLng, 0, []Cell{c}},
		{"short of the edge", midLat, eastLng, 9, []Cell{c}},
		{"over the edge", midLat, eastLng, 11, []Cell{c, east}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CellsWithin(tt.lat, tt.lng, tt.radius, 30)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("CellsWithin = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCellsWithinNearestFirst(t *testing.T) {
	cells, err := CellsWithin(51.5074, -0.1278, 3000, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) < 9 {
		t.Fatalf("got %d cells for 3 km at 30 bits, want at least 9", len(cells))
	}
	prev := 0.0
	for _, c := range cells[1:] {
		d := distanceToBoxM(51.5074, -0.1278, c.Bounds())
		if d < prev {
			t.Fatalf("cells not nearest first: %.1f m after %.1f m in %v", d, prev, cells)
		}
		prev = d
	}
}

func TestCellsWithinPole(t *testing.T) {
	// A circle over the pole covers every column of the polar row.
	cells, err := CellsWithin(89.99, 0, 5000, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(cells), 32; got != want {
		t.Errorf("len(CellsWithin over the pole at 10 bits) = %d, want %d (every column)", got, want)
	}
}

func TestCellsWithinWholeWorld(t *testing.T) {
	cells, err := CellsWithin(0, 0, math.Pi*EarthRadiusM, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(cells), 16; got != want {
		t.Errorf("len(CellsWithin(half the circumference, 4 bits)) = %d, want %d", got, want)
	}
}

func TestCellsWithinInvalid(t *testing.T) {
	tests := []struct {
		name        string
		lat, lng, r float64
		bits        uint
		wantTooMany bool
	}{
		{"negative radius", 0, 0, -1, 20, false},
		{"NaN radius", 0, 0, math.NaN(), 20, false},
		{"infinite radius", 0, 0, math.Inf(1), 20, false},
		{"bad lat", 100, 0, 10, 20, false},
		{"bad bits", 0, 0, 10, 0, false},
		{"radius too big for bits", 0, 0, 100_000, 40, true},
		{"huge radius", 0, 0, 1e300, 40, true},
		{"pole at fine precision", 89.999, 0, 1000, 40, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, err := CellsWithin(tt.lat, tt.lng, tt.r, tt.bits)
			if err == nil {
				t.Fatalf("CellsWithin = %d cells, nil; want error", len(cells))
			}
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("errors.Is(%v, ErrInvalidArgument) = false", err)
			}
			if got := errors.Is(err, ErrTooManyCells); got != tt.wantTooMany {
				t.Errorf("errors.Is(%v, ErrTooManyCells) = %t, want %t", err, got, tt.wantTooMany)
			}
		})
	}
}
