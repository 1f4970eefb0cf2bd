package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/apollo-platform/apollo/internal/driver"
)

// City is a bounding box drivers live in.
type City struct {
	Name           string
	MinLat, MaxLat float64
	MinLng, MaxLng float64
}

// Singapore is the default city.
func Singapore() City {
	return City{Name: "singapore", MinLat: 1.24, MaxLat: 1.46, MinLng: 103.62, MaxLng: 104.0}
}

// Validate reports an impossible box.
func (c City) Validate() error {
	if err := driver.ValidateLocation(c.MinLat, c.MinLng); err != nil {
		return fmt.Errorf("city %s: %w", c.Name, err)
	}
	if err := driver.ValidateLocation(c.MaxLat, c.MaxLng); err != nil {
		return fmt.Errorf("city %s: %w", c.Name, err)
	}
	if c.MinLat >= c.MaxLat || c.MinLng >= c.MaxLng {
		return errors.New("city box must have min < max")
	}
	return nil
}

// random returns a uniformly random point in the box.
func (c City) random(rng *rand.Rand) driver.Location {
	return driver.Location{
		Lat: c.MinLat + rng.Float64()*(c.MaxLat-c.MinLat),
		Lng: c.MinLng + rng.Float64()*(c.MaxLng-c.MinLng),
	}
}

// clamp keeps a moving driver inside the box.
func (c City) clamp(l driver.Location) driver.Location {
	l.Lat = min(max(l.Lat, c.MinLat), c.MaxLat)
	l.Lng = min(max(l.Lng, c.MinLng), c.MaxLng)
	return l
}

// contains reports whether l is inside the box.
func (c City) contains(l driver.Location) bool {
	return c.MinLat <= l.Lat && l.Lat <= c.MaxLat && c.MinLng <= l.Lng && l.Lng <= c.MaxLng
}
