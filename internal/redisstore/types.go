package redisstore

import (
	"errors"
	"fmt"

	"github.com/apollo-platform/apollo/internal/driver"
)

// Batch is the answer to a batch read: one failed node never fails the call.
type Batch struct {
	Drivers []driver.Driver // found, in request order
	Missing []string        // ids with no record
	Failed  []Failure       // ids whose read failed
}

// Failure is one id that could not be read, and why.
type Failure struct {
	ID  string
	Err error
}

// NearbyQuery asks for available drivers of a service around a point.
type NearbyQuery struct {
	Lat, Lng float64
	RadiusM  float64
	Service  string
	Limit    int
}

// NearbyDriver is a candidate with its distance from the query point.
type NearbyDriver struct {
	Driver    driver.Driver
	DistanceM float64
}

// Nearby is the answer to a nearby search: cells and drivers' records that
// could not be read are reported, not fatal.
type Nearby struct {
	Drivers       []NearbyDriver // nearest first
	FailedCells   []Failure      // ID is the cell
	FailedDrivers []Failure      // ID is the driver: found in a cell, its record unread
}

// Incomplete is nil when the search could reach everything it looked at,
// and otherwise an error wrapping the first unavailability's: drivers may
// then be missing from Drivers, so an empty answer does not show that none
// is free. A record that was read but cannot be decoded (ErrUnavailable
// does not wrap its error) is not counted: it would stay so, and every
// search around it would be incomplete for ever.
func (n Nearby) Incomplete() error {
	var first *Failure
	unread := 0
	for _, fs := range [][]Failure{n.FailedCells, n.FailedDrivers} {
		for i := range fs {
			if !errors.Is(fs[i].Err, ErrUnavailable) {
				continue
			}
			if unread++; first == nil {
				first = &fs[i]
			}
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("nearby search incomplete: %d cells or drivers' records could not be read (first: %s): %w", unread, first.ID, first.Err)
}
