package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// nearbyResponse lists available drivers nearest first. A cell, or a found
// driver's record, whose read failed is reported, not fatal, like a failed
// id of a batch.
type nearbyResponse struct {
	Drivers       []nearbyDriverJSON `json:"drivers"`
	FailedCells   []cellFailureJSON  `json:"failed_cells"`
	FailedDrivers []failureJSON      `json:"failed_drivers"`
}

type nearbyDriverJSON struct {
	driverJSON
	DistanceM float64 `json:"distance_m"`
}

type cellFailureJSON struct {
	Cell  string    `json:"cell"`
	Error errorJSON `json:"error"`
}

// nearbyQuery parses and validates ?lat=&lng=&radius_m=&service=&limit=.
func (a *api) nearbyQuery(raw string) (redisstore.NearbyQuery, error) {
	q, err := parseQuery(raw, "lat", "lng", "radius_m", "service", "limit")
	if err != nil {
		return redisstore.NearbyQuery{}, err
	}
	var nq redisstore.NearbyQuery
	if nq.Lat, err = q.float("lat"); err != nil {
		return nq, err
	}
	if nq.Lng, err = q.float("lng"); err != nil {
		return nq, err
	}
	if err := driver.ValidateLocation(nq.Lat, nq.Lng); err != nil {
		return nq, err
	}
	if nq.RadiusM, err = q.floatOr("radius_m", a.cfg.DefaultRadiusM); err != nil {
		return nq, err
	}
	if !(nq.RadiusM > 0 && nq.RadiusM <= a.cfg.MaxRadiusM) {
		return nq, invalid("radius_m", "must be within (0, %g]", a.cfg.MaxRadiusM)
	}
	if nq.Service, err = q.text("service"); err != nil {
		return nq, err
	}
	if err := driver.ValidateService(nq.Service); err != nil {
		return nq, err
	}
	if nq.Limit, err = q.intOr("limit", a.cfg.DefaultLimit); err != nil {
		return nq, err
	}
	if nq.Limit < 1 || nq.Limit > a.cfg.MaxLimit {
		return nq, invalid("limit", "must be within [1, %d]", a.cfg.MaxLimit)
	}
	return nq, nil
}

// nearby finds available drivers of a service around a point.
func (a *api) nearby(w http.ResponseWriter, r *http.Request) {
	q, err := a.nearbyQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.now()
	nb, err := a.drivers.Nearby(r.Context(), q, now)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	resp := nearbyResponse{
		Drivers:       make([]nearbyDriverJSON, 0, len(nb.Drivers)),
		FailedCells:   make([]cellFailureJSON, 0, len(nb.FailedCells)),
		FailedDrivers: make([]failureJSON, 0, len(nb.FailedDrivers)),
	}
	for _, nd := range nb.Drivers {
		resp.Drivers = append(resp.Drivers, nearbyDriverJSON{driverJSON: newDriverJSON(nd.Driver, a.rules, now), DistanceM: nd.DistanceM})
	}
	for _, f := range nb.FailedCells {
		_, e := a.describe(r, f.Err, slog.String("cell", f.ID))
		resp.FailedCells = append(resp.FailedCells, cellFailureJSON{Cell: f.ID, Error: e})
	}
	for _, f := range nb.FailedDrivers {
		_, e := a.describe(r, f.Err, slog.String("driver_id", f.ID))
		resp.FailedDrivers = append(resp.FailedDrivers, failureJSON{ID: f.ID, Error: e})
	}
	a.respond(w, r, resp)
}
