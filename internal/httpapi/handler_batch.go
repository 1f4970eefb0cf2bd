package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/apollo-platform/apollo/internal/driver"
)

// batchRequest is the body of POST /v1/drivers/batch-get.
type batchRequest struct {
	IDs []string `json:"ids"`
}

// batchResponse answers every distinct id exactly once, in one of the
// three lists. A failed read of some ids is reported, not fatal: this is
// the read that one dead replica must never take down as a whole.
type batchResponse struct {
	Drivers []driverJSON  `json:"drivers"`
	Missing []string      `json:"missing"`
	Failed  []failureJSON `json:"failed"`
}

type failureJSON struct {
	ID    string    `json:"id"`
	Error errorJSON `json:"error"`
}

// uniqueIDs validates the ids and returns them without duplicates, in
// first-seen order. The cap applies before folding duplicates, so it
// bounds the work of validation too.
func (req batchRequest) uniqueIDs(maxBatch int) ([]string, error) {
	if len(req.IDs) == 0 || len(req.IDs) > maxBatch {
		return nil, invalid("ids", "must list 1 to %d ids, got %d", maxBatch, len(req.IDs))
	}
	seen := make(map[string]struct{}, len(req.IDs))
	unique := make([]string, 0, len(req.IDs))
	for i, id := range req.IDs {
		if err := driver.ValidateID(id); err != nil {
			return nil, renameField(err, fmt.Sprintf("ids[%d]", i))
		}
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		unique = append(unique, id)
	}
	return unique, nil
}

// batchGet reads many drivers at once.
func (a *api) batchGet(w http.ResponseWriter, r *http.Request) {
	var req batchRequest
	if err := decodeBody(w, r, a.cfg.MaxBodyBytes, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	ids, err := req.uniqueIDs(a.cfg.MaxBatch)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.now()
	b, err := a.drivers.BatchGet(r.Context(), ids)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	resp := batchResponse{
		Drivers: make([]driverJSON, 0, len(b.Drivers)),
		Missing: make([]string, 0, len(b.Missing)),
		Failed:  make([]failureJSON, 0, len(b.Failed)),
	}
	for _, d := range b.Drivers {
		resp.Drivers = append(resp.Drivers, newDriverJSON(d, a.rules, now))
	}
	resp.Missing = append(resp.Missing, b.Missing...)
	for _, f := range b.Failed {
		_, e := a.describe(r, f.Err, slog.String("driver_id", f.ID))
		resp.Failed = append(resp.Failed, failureJSON{ID: f.ID, Error: e})
	}
	a.respond(w, r, resp)
}
