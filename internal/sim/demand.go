package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
)

// Storm is a local demand spike: from Start to End after the run begins,
// riders inside the circle book at Multiplier times the whole city's base
// rate (rain over one district, a concert letting out).
type Storm struct {
	Center     driver.Location
	RadiusM    float64
	Start, End time.Duration
	Multiplier float64
}

// Inside reports whether l is within the storm's circle.
func (s Storm) Inside(l driver.Location) bool { return DistanceM(s.Center, l) <= s.RadiusM }

// DistanceM is the great-circle distance between two points.
func DistanceM(a, b driver.Location) float64 { return geocell.DistanceM(a.Lat, a.Lng, b.Lat, b.Lng) }

// Demand shapes the riders: BaseRate bookings per second spread uniformly
// over the city for Duration, plus the storm if Storm.Multiplier > 0.
type Demand struct {
	BaseRate float64
	Duration time.Duration
	Storm    Storm
	City     City
	Seed     uint64
}

// Validate reports demand that cannot be generated.
func (d Demand) Validate() error {
	var errs []error
	if d.BaseRate <= 0 || d.BaseRate > 10_000 {
		errs = append(errs, fmt.Errorf("base rate must be within (0, 10000] bookings/s, got %g", d.BaseRate))
	}
	if d.Duration <= 0 {
		errs = append(errs, errors.New("duration must be positive"))
	}
	if s := d.Storm; s.Multiplier != 0 {
		if s.Multiplier < 0 || s.Multiplier > 1000 {
			errs = append(errs, fmt.Errorf("spike multiplier must be within [0, 1000], got %g", s.Multiplier))
		}
		if s.RadiusM < 50 || s.RadiusM > 20_000 {
			errs = append(errs, fmt.Errorf("hotspot radius must be within [50, 20000] m, got %g", s.RadiusM))
		}
		if err := driver.ValidateLocation(s.Center.Lat, s.Center.Lng); err != nil {
			errs = append(errs, fmt.Errorf("hotspot: %w", err))
		}
		if s.Start < 0 || s.End <= s.Start || s.End > d.Duration {
			errs = append(errs, fmt.Errorf("storm must start at or after 0 and end after it starts, within the run (%s–%s of %s)", s.Start, s.End, d.Duration))
		}
	}
	return errors.Join(append(errs, d.City.Validate())...)
}

// Arrival is one rider asking for a ride.
type Arrival struct {
	At        time.Duration // since the run began
	Rider     string
	Pickup    driver.Location
	Dropoff   driver.Location
	InHotspot bool // the pickup is inside the storm's circle (whether or not it rains yet)
	Storm     bool // this rider exists because of the storm
}

// Arrivals returns every rider of the run in time order: Poisson arrivals,
// the same for the same Demand (and so the same in every mode of a spike
// drill, which is what makes the modes comparable).
func Arrivals(d Demand) ([]Arrival, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(d.Seed, 11))
	var out []Arrival
	for t := exp(rng, d.BaseRate); t < d.Duration.Seconds(); t += exp(rng, d.BaseRate) {
		out = append(out, Arrival{At: secs(t), Pickup: d.City.random(rng), Dropoff: d.City.random(rng)})
	}
	if s := d.Storm; s.Multiplier > 0 {
		rate := s.Multiplier * d.BaseRate
		for t := s.Start.Seconds() + exp(rng, rate); t < s.End.Seconds(); t += exp(rng, rate) {
			out = append(out, Arrival{At: secs(t), Pickup: d.City.clamp(inCircle(rng, s.Center, s.RadiusM)), Dropoff: d.City.random(rng), Storm: true})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	for i := range out {
		out[i].Rider = fmt.Sprintf("rider-%07d", i)
		out[i].InHotspot = d.Storm.RadiusM > 0 && d.Storm.Inside(out[i].Pickup)
	}
	return out, nil
}

func exp(rng *rand.Rand, rate float64) float64 { return rng.ExpFloat64() / rate }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// metresPerDegree is a degree of latitude on geocell's sphere, so that
// Offset and DistanceM agree.
const metresPerDegree = geocell.EarthRadiusM * math.Pi / 180

// inCircle is a uniformly random point within r metres of c.
func inCircle(rng *rand.Rand, c driver.Location, r float64) driver.Location {
	d, theta := r*math.Sqrt(rng.Float64()), 2*math.Pi*rng.Float64()
	return Offset(c, d*math.Sin(theta), d*math.Cos(theta))
}

// Offset moves l north by dy and east by dx metres (flat-earth, fine at
// city scale).
func Offset(l driver.Location, dy, dx float64) driver.Location {
	return driver.Location{
		Lat: l.Lat + dy/metresPerDegree,
		Lng: l.Lng + dx/(metresPerDegree*math.Cos(l.Lat*math.Pi/180)),
	}
}
