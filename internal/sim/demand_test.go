package sim

import (
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

func stormDemand() Demand {
	return Demand{BaseRate: 20, Duration: 60 * time.Second, City: Singapore(), Seed: 7,
		Storm: Storm{Center: driver.Location{Lat: 1.284, Lng: 103.851}, RadiusM: 800, Start: 20 * time.Second, End: 40 * time.Second, Multiplier: 10}}
}

func TestArrivalsAreTheSameForTheSameSeed(t *testing.T) {
	a, err := Arrivals(stormDemand())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Arrivals(stormDemand())
	if len(a) != len(b) {
		t.Fatalf("%d arrivals, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("arrival %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
	d := stormDemand()
	d.Seed++
	if c, _ := Arrivals(d); len(c) > 0 && c[0] == a[0] {
		t.Error("another seed gave the same first rider")
	}
}

// The base riders are the same with or without the storm, so a run with
// the storm can be compared rider for rider with the baseline.
func TestTheStormOnlyAddsRiders(t *testing.T) {
	withStorm, _ := Arrivals(stormDemand())
	calm := stormDemand()
	calm.Storm.Multiplier = 0
	base, err := Arrivals(calm)
	if err != nil {
		t.Fatal(err)
	}
	var kept []Arrival
	for _, a := range withStorm {
		if !a.Storm {
			kept = append(kept, a)
		}
	}
	if len(kept) != len(base) {
		t.Fatalf("%d base riders with the storm, %d without", len(kept), len(base))
	}
	for i := range kept {
		if kept[i].At != base[i].At || kept[i].Pickup != base[i].Pickup {
			t.Fatalf("base rider %d moved: %+v vs %+v", i, kept[i], base[i])
		}
	}
}

func TestArrivalsFollowTheRatesAndTheStorm(t *testing.T) {
	d := stormDemand()
	arr, _ := Arrivals(d)
	var base, storm int
	for i, a := range arr {
		if i > 0 && a.At < arr[i-1].At {
			t.Fatalf("arrival %d out of order", i)
		}
		if !d.City.contains(a.Pickup) || !d.City.contains(a.Dropoff) {
			t.Fatalf("arrival %d outside the city: %+v", i, a)
		}
		if !a.Storm {
			base++
			continue
		}
		storm++
		if a.At < d.Storm.Start || a.At >= d.Storm.End || !a.InHotspot {
			t.Fatalf("storm rider %d at %s, in hotspot %v", i, a.At, a.InHotspot)
		}
	}
	// Poisson counts: 1200 ± 5σ base riders, 4000 ± 5σ storm riders.
	if base < 1030 || base > 1370 {
		t.Errorf("%d base riders in 60 s at 20/s", base)
	}
	if storm < 3680 || storm > 4320 {
		t.Errorf("%d storm riders in 20 s at 200/s", storm)
	}
}

func TestDemandValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Demand)
		ok   bool
	}{
		{"storm", func(*Demand) {}, true},
		{"no storm", func(d *Demand) { d.Storm = Storm{} }, true},
		{"zero rate", func(d *Demand) { d.BaseRate = 0 }, false},
		{"storm past the end", func(d *Demand) { d.Storm.End = 2 * time.Minute }, false},
		{"storm ends before it starts", func(d *Demand) { d.Storm.End = d.Storm.Start }, false},
		{"tiny hotspot", func(d *Demand) { d.Storm.RadiusM = 1 }, false},
		{"hotspot off the globe", func(d *Demand) { d.Storm.Center.Lat = 91 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := stormDemand()
			tt.edit(&d)
			if err := d.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestOffsetAndDistanceAgree(t *testing.T) {
	c := driver.Location{Lat: 1.3, Lng: 103.8}
	for _, m := range []struct{ dy, dx float64 }{{800, 0}, {0, 800}, {-300, 400}} {
		p := Offset(c, m.dy, m.dx)
		want := m.dy*m.dy + m.dx*m.dx
		if got := DistanceM(c, p); got*got < want*0.999 || got*got > want*1.001 {
			t.Errorf("Offset(%v, %v) is %.1f m away", m.dy, m.dx, got)
		}
	}
}
