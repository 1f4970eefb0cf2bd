package httpapi

import (
	"net/http"

	"github.com/apollo-platform/apollo/internal/driver"
)

// locationRequest is the body of PUT /v1/drivers/{id}/location. Pointers
// tell a missing coordinate from a zero one: 0,0 is a real place (in the
// Gulf of Guinea), so a forgotten field must not silently land there.
type locationRequest struct {
	Lat *float64 `json:"lat"`
	Lng *float64 `json:"lng"`
}

func (req locationRequest) location() (driver.Location, error) {
	switch {
	case req.Lat == nil:
		return driver.Location{}, invalid("lat", "is required")
	case req.Lng == nil:
		return driver.Location{}, invalid("lng", "is required")
	}
	loc := driver.Location{Lat: *req.Lat, Lng: *req.Lng}
	if err := driver.ValidateLocation(loc.Lat, loc.Lng); err != nil {
		return driver.Location{}, err
	}
	return loc, nil
}

// putLocation records a heartbeat: the driver's position now.
func (a *api) putLocation(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var req locationRequest
	if err := decodeBody(w, r, a.cfg.MaxBodyBytes, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	loc, err := req.location()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.now()
	d, err := a.drivers.Heartbeat(r.Context(), id, loc, now)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, newDriverJSON(d, a.rules, now))
}

// pathID returns the {id} path value, validated.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := validateID("id", id); err != nil {
		return "", err
	}
	return id, nil
}
