package driver

import "time"

// Driver is one driver's state as Apollo sees it.
type Driver struct {
	ID       string
	Services []string // services offered, e.g. "car", "bike"; set on go_online
	Status   Status
	Location Location

	// LastHeartbeat is when the driver's app last reported its location.
	LastHeartbeat time.Time

	// BookingID is the booking the driver is reserved for or driving;
	// empty in offline and available.
	BookingID string
	// ReservedUntil is when the reservation lapses, and Accepted whether
	// the driver accepted it; both are zero outside reserved.
	ReservedUntil time.Time
	Accepted      bool
	// Withdrawn: the driver is backing out of the reservation it accepted
	// (EventBackOut). Neither an accept nor a trip can come any more: the
	// reservation waits only for its booking to let go, then its release.
	Withdrawn bool

	// Version counts state transitions. Storage compares it to apply a
	// transition only to the state it was computed from.
	Version int64
}

// Location is a WGS84 position in degrees.
type Location struct {
	Lat, Lng float64
}

// Serves reports whether d offers the given service.
func (d Driver) Serves(service string) bool {
	for _, s := range d.Services {
		if s == service {
			return true
		}
	}
	return false
}
