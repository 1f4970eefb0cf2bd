package httpapi

import "net/http"

// cancelRequest is the optional body of POST /v1/bookings/{id}/cancel:
// nothing, or {}. It has no fields yet; decoding into it still refuses
// unknown ones, so a client cannot believe it sent a reason that was
// dropped.
type cancelRequest struct{}

// cancelBooking cancels a booking that no driver has accepted yet.
func (a *api) cancelBooking(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var body *cancelRequest
	present, err := decodeOptionalBody(w, r, a.cfg.MaxBodyBytes, &body)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if present && body == nil { // null
		a.fail(w, r, invalid("body", "must be empty or {}"))
		return
	}
	b, err := a.bookings.Cancel(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, newBookingJSON(b))
}
