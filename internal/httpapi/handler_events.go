package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// publicEvents are the events a driver's app may send. reserve and expire
// belong to dispatch, and back_out to the booking pipeline (a decline's
// first step): letting a client send them would let anyone reserve a
// driver outside the booking pipeline, cancel someone's reservation, or
// withdraw an accept while its booking still holds the driver.
func publicEvents() []driver.Event {
	return []driver.Event{
		driver.EventGoOnline, driver.EventGoOffline, driver.EventAccept,
		driver.EventDecline, driver.EventStartTrip, driver.EventEndTrip,
	}
}

// eventRequest is the body of POST /v1/drivers/{id}/events.
type eventRequest struct {
	Type *string `json:"type"`
	// Services is required with go_online and refused with anything else.
	Services []string `json:"services"`
	// BookingID is optional with booking events (absent: the booking the
	// driver holds) and refused with go_online and go_offline.
	BookingID *string `json:"booking_id"`
	// ReservedUntil is optional with accept and decline, refused with the
	// rest: the reservation answered, as the driver's reserved_until showed
	// it. An answer sent again after a lost response then cannot act on a
	// later reservation of the same booking, which the app never saw.
	ReservedUntil *time.Time `json:"reserved_until"`
}

func (req eventRequest) transition() (driver.Transition, error) {
	if req.Type == nil {
		return driver.Transition{}, invalid("type", "is required")
	}
	ev := driver.Event(*req.Type)
	if ev == driver.EventReserve || ev == driver.EventExpire || ev == driver.EventBackOut {
		return driver.Transition{}, invalid("type", "%q is made by Apollo (dispatch, or the booking pipeline) and cannot be sent through the API", ev)
	}
	if !slices.Contains(publicEvents(), ev) {
		return driver.Transition{}, invalid("type", "must be one of %s, got %.32q", eventNames(), *req.Type)
	}
	tr := driver.Transition{Event: ev}

	if ev == driver.EventGoOnline {
		if err := driver.ValidateServices(req.Services); err != nil {
			return driver.Transition{}, err
		}
		tr.Services = req.Services
	} else if req.Services != nil {
		return driver.Transition{}, invalid("services", "is only allowed with go_online")
	}

	if req.BookingID != nil {
		if ev == driver.EventGoOnline || ev == driver.EventGoOffline {
			return driver.Transition{}, invalid("booking_id", "is not allowed with %s", ev)
		}
		if err := validateID("booking_id", *req.BookingID); err != nil {
			return driver.Transition{}, err
		}
		tr.BookingID = *req.BookingID
	}
	if req.ReservedUntil != nil {
		if ev != driver.EventAccept && ev != driver.EventDecline {
			return driver.Transition{}, invalid("reserved_until", "is only allowed with accept and decline")
		}
		if req.ReservedUntil.IsZero() {
			return driver.Transition{}, invalid("reserved_until", "must be the end of the reservation answered")
		}
		tr.Until = *req.ReservedUntil
	}
	return tr, nil
}

func eventNames() string {
	events := publicEvents()
	names := make([]string, len(events))
	for i, ev := range events {
		names[i] = string(ev)
	}
	return strings.Join(names, ", ")
}

// postEvent applies one driver-initiated transition.
func (a *api) postEvent(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var req eventRequest
	if err := decodeBody(w, r, a.cfg.MaxBodyBytes, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	tr, err := req.transition()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.now()
	d, err := a.drivers.Apply(r.Context(), id, tr, now)
	if err != nil {
		// Tell the client where the driver stands when the store says so.
		if _, perr := driver.ParseStatus(string(d.Status)); perr == nil {
			err = &currentStatusError{err: err, status: d.Status}
		}
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, newDriverJSON(d, a.rules, now))
}
