package httpapi

import "net/http"

// getDriver returns one driver, or not_found.
func (a *api) getDriver(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	d, err := a.drivers.Get(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, newDriverJSON(d, a.rules, a.now()))
}
