package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// driverJSON is a driver on the wire. Times are RFC 3339 in UTC; zero
// times and an empty booking are left out.
type driverJSON struct {
	ID            string        `json:"id"`
	Services      []string      `json:"services"`
	Status        driver.Status `json:"status"`
	Location      locationJSON  `json:"location"`
	LastHeartbeat time.Time     `json:"last_heartbeat,omitzero"`
	BookingID     string        `json:"booking_id,omitempty"`
	ReservedUntil time.Time     `json:"reserved_until,omitzero"`
	Accepted      bool          `json:"accepted"`
	// Withdrawn: the driver is backing out of the reservation (its accept
	// withdrawn, the booking letting go): not an offer to accept.
	Withdrawn bool  `json:"withdrawn,omitempty"`
	Version   int64 `json:"version"`
	// Available is true when, at the moment the response was made (by
	// this server's clock), the driver could be offered a booking for at
	// least one of its services: status available, at least one service,
	// and a heartbeat no older than Rules.StaleAfter. It is a snapshot for
	// display and debugging; dispatch decides again when it reserves.
	Available bool `json:"available"`
}

type locationJSON struct {
	Lat float64 `json:"lat"`
	Lng float64 `json:"lng"`
}

func newDriverJSON(d driver.Driver, rules driver.Rules, now time.Time) driverJSON {
	services := d.Services
	if services == nil {
		services = []string{} // always an array, never null
	}
	return driverJSON{
		ID:            d.ID,
		Services:      services,
		Status:        d.Status,
		Location:      locationJSON{Lat: d.Location.Lat, Lng: d.Location.Lng},
		LastHeartbeat: d.LastHeartbeat.UTC(),
		BookingID:     d.BookingID,
		ReservedUntil: d.ReservedUntil.UTC(),
		Accepted:      d.Accepted,
		Withdrawn:     d.Withdrawn,
		Version:       d.Version,
		Available:     availableForAny(d, rules, now),
	}
}

// bookingJSON is a booking on the wire, with the field names of the
// booking package's own JSON. Times are RFC 3339 in UTC; no driver, no
// reservation and, before the first allocation, allocated_at are left out.
type bookingJSON struct {
	ID            string         `json:"id"`
	RiderID       string         `json:"rider_id"`
	Service       string         `json:"service"`
	Pickup        locationJSON   `json:"pickup"`
	Dropoff       locationJSON   `json:"dropoff"`
	Status        booking.Status `json:"status"`
	DriverID      string         `json:"driver_id,omitempty"`
	ReservedUntil time.Time      `json:"reserved_until,omitzero"`
	AllocatedAt   time.Time      `json:"allocated_at,omitzero"`
	CreatedAt     time.Time      `json:"created_at"`
	Deadline      time.Time      `json:"deadline"`
	UpdatedAt     time.Time      `json:"updated_at"`
	// Version counts the booking's changes; pass it as ?version= to wait
	// for the next one.
	Version int64 `json:"version"`
}

func newBookingJSON(b booking.Booking) bookingJSON {
	return bookingJSON{
		ID:            b.ID,
		RiderID:       b.RiderID,
		Service:       b.Service,
		Pickup:        locationJSON{Lat: b.Pickup.Lat, Lng: b.Pickup.Lng},
		Dropoff:       locationJSON{Lat: b.Dropoff.Lat, Lng: b.Dropoff.Lng},
		Status:        b.Status,
		DriverID:      b.DriverID,
		ReservedUntil: b.ReservedUntil.UTC(),
		AllocatedAt:   b.AllocatedAt.UTC(),
		CreatedAt:     b.CreatedAt.UTC(),
		Deadline:      b.Deadline.UTC(),
		UpdatedAt:     b.UpdatedAt.UTC(),
		Version:       b.Version,
	}
}

// availableForAny reports whether rules make d available for any service
// it offers.
func availableForAny(d driver.Driver, rules driver.Rules, now time.Time) bool {
	for _, s := range d.Services {
		if rules.Available(d, now, s) {
			return true
		}
	}
	return false
}

// respond writes v as a 200 response. v is marshalled before anything is
// written, so a value that cannot be encoded (a NaN from the store, say)
// still becomes a clean 500 instead of a half-written 200.
func (a responder) respond(w http.ResponseWriter, r *http.Request, v any) {
	a.respondStatus(w, r, http.StatusOK, v)
}

// respondStatus is respond with another success status, e.g. 201.
func (a responder) respondStatus(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		a.fail(w, r, fmt.Errorf("encode response: %w", err))
		return
	}
	writeBody(w, status, b)
}

// writeBody writes an encoded JSON body with its status.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // a failed write means the client left; nothing to tell it
}
