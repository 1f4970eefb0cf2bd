package httpapi

import (
	"net/http"
	"net/url"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// IdempotencyKeyHeader carries the rider app's key for one booking attempt:
// retries of POST /v1/bookings with the same key (and rider) return the
// booking the first attempt made, never a second one.
const IdempotencyKeyHeader = "Idempotency-Key"

// maxIdempotencyKeyLen matches what the booking pipeline accepts.
const maxIdempotencyKeyLen = 128

// bookingRequest is the body of POST /v1/bookings. Pointers tell a missing
// field from a zero one, as in locationRequest.
type bookingRequest struct {
	RiderID *string          `json:"rider_id"`
	Service *string          `json:"service"`
	Pickup  *locationRequest `json:"pickup"`
	Dropoff *locationRequest `json:"dropoff"`
}

// request validates the body field by field, so that every error names
// the field at fault as the client spells it (e.g. "pickup.lat").
func (req bookingRequest) request() (booking.Request, error) {
	if req.RiderID == nil {
		return booking.Request{}, invalid("rider_id", "is required")
	}
	if err := validateID("rider_id", *req.RiderID); err != nil {
		return booking.Request{}, err
	}
	if req.Service == nil {
		return booking.Request{}, invalid("service", "is required")
	}
	if err := driver.ValidateService(*req.Service); err != nil {
		return booking.Request{}, err
	}
	pickup, err := req.Pickup.place("pickup")
	if err != nil {
		return booking.Request{}, err
	}
	dropoff, err := req.Dropoff.place("dropoff")
	if err != nil {
		return booking.Request{}, err
	}
	return booking.Request{RiderID: *req.RiderID, Service: *req.Service, Pickup: pickup, Dropoff: dropoff}, nil
}

// place returns a required location, its errors reported under field
// (e.g. "dropoff", "dropoff.lng").
func (req *locationRequest) place(field string) (driver.Location, error) {
	if req == nil {
		return driver.Location{}, invalid(field, "is required")
	}
	loc, err := req.location()
	return loc, nestField(err, field)
}

// idempotencyKey returns the optional Idempotency-Key header: when given,
// once, with 1 to 128 printable ASCII characters. A key that fails these
// rules is refused rather than ignored: ignoring it would silently make
// the client's retries unsafe.
func idempotencyKey(h http.Header) (string, error) {
	vs := h.Values(IdempotencyKeyHeader)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", invalid(IdempotencyKeyHeader, "must be given once")
	}
	k := vs[0]
	bad := len(k) == 0 || len(k) > maxIdempotencyKeyLen
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x20 || k[i] > 0x7e
	}
	if bad {
		return "", invalid(IdempotencyKeyHeader, "must be 1 to %d printable ASCII characters", maxIdempotencyKeyLen)
	}
	return k, nil
}

// createBooking runs the booking pipeline for a rider. The answer is 201
// with the booking, also when a retry with the same Idempotency-Key finds
// the booking an earlier attempt made.
func (a *api) createBooking(w http.ResponseWriter, r *http.Request) {
	key, err := idempotencyKey(r.Header)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var body bookingRequest
	if err := decodeBody(w, r, a.cfg.MaxBodyBytes, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	req, err := body.request()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	req.IdempotencyKey = key
	b, err := a.bookings.Create(r.Context(), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if b.ID != "" {
		w.Header().Set("Location", "/v1/bookings/"+url.PathEscape(b.ID))
	}
	a.respondStatus(w, r, http.StatusCreated, newBookingJSON(b))
}
