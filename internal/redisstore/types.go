package redisstore

import "github.com/apollo-platform/apollo/internal/driver"

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

// Nearby is the answer to a nearby search: cells that could not be read are
// reported, not fatal.
type Nearby struct {
	Drivers     []NearbyDriver // nearest first
	FailedCells []Failure      // ID is the cell
}
