package geocell

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mmcloughlin/geohash"
)

func TestNeighborsMatchLibraryAwayFromPoles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		bits := MinBits + 2 + uint(rng.IntN(int(MaxBits-MinBits-1))) // >= 3: no duplicate E/W
		lat := rng.Float64()*170 - 85
		lng := rng.Float64()*360 - 180
		c, err := Of(lat, lng, bits)
		if err != nil {
			t.Fatal(err)
		}
		if b := c.Bounds(); b.MaxLat == 90 || b.MinLat == -90 {
			continue // polar row: the library wraps to the other pole
		}
		var want []Cell
		for _, h := range geohash.NeighborsIntWithPrecision(c.Hash(), bits) {
			want = append(want, Cell{bits: bits, hash: h})
		}
		if got := c.Neighbors(); !slices.Equal(got, want) {
			t.Fatalf("%v.Neighbors() = %v, want %v (library)", c, got, want)
		}
	}
}

func TestNeighborsTouch(t *testing.T) {
	c, _ := Of(1.3521, 103.8198, 30)
	n := c.Neighbors()
	if len(n) != 8 {
		t.Fatalf("len(Neighbors()) = %d, want 8", len(n))
	}
	b := c.Bounds()
	for _, x := range n {
		nb := x.Bounds()
		touches := nb.MinLat <= b.MaxLat && b.MinLat <= nb.MaxLat && nb.MinLng <= b.MaxLng && b.MinLng <= nb.MaxLng
		if !touches || x == c {
			t.Errorf("neighbour %v %+v does not touch %v %+v", x, nb, c, b)
		}
	}
}

func TestNeighborsEdges(t *testing.T) {
	tests := []struct {
		name     string
		lat, lng float64
		bits     uint
		want     int
		wantLngs []float64 // MinLng values some neighbour must have
	}{
		{"north polar row", 89.9, 0, 20, 5, nil},
		{"south polar row", -89.9, 0, 20, 5, nil},
		{"antimeridian east side", 0, 179.99, 20, 8, []float64{-180}},
		{"antimeridian west side", 0, -179.99, 20, 8, []float64{180 - 360.0/1024}},
		{"one bit: the other half", 10, 10, 1, 1, []float64{-180}},
		{"two bits", 10, 10, 2, 3, nil},
		{"three bits", 10, 10, 3, 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Of(tt.lat, tt.lng, tt.bits)
			if err != nil {
				t.Fatal(err)
			}
			n := c.Neighbors()
			if len(n) != tt.want {
				t.Errorf("len(Neighbors()) = %d (%v), want %d", len(n), n, tt.want)
			}
			seen := map[Cell]bool{}
			for _, x := range n {
				if x == c || seen[x] {
					t.Errorf("Neighbors() = %v: contains itself or a duplicate", n)
				}
				seen[x] = true
				if x.Bits() != c.Bits() {
					t.Errorf("neighbour %v has %d bits, want %d", x, x.Bits(), c.Bits())
				}
			}
			for _, lng := range tt.wantLngs {
				if !slices.ContainsFunc(n, func(x Cell) bool { return x.Bounds().MinLng == lng }) {
					t.Errorf("no neighbour starts at lng %v: %v", lng, n)
				}
			}
		})
	}
}

func TestNeighborsOfZeroCell(t *testing.T) {
	if got := (Cell{}).Neighbors(); got != nil {
		t.Errorf("Cell{}.Neighbors() = %v, want nil", got)
	}
}
