package httpapi

import (
	"bytes"
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

// The largest scratch kept for reuse: a batch of a few hundred drivers,
// not the odd megabyte-sized body.
const (
	maxPooledBuffer  = 64 << 10
	maxPooledDrivers = 256
)

// decodeBatchRequest reads the ids of a batch-get body: the usual body
// by scanIDs, any other by unmarshalStrict.
func decodeBatchRequest(body []byte, maxBatch int) (batchRequest, error) {
	// A guess at the number of ids, from the quotes (the field name's two
	// and each id's two), within what uniqueIDs will accept.
	guess := min(max(bytes.Count(body, []byte{'"'})/2-1, 0), maxBatch+1)
	if ids, ok := scanIDs(string(body), make([]string, 0, guess)); ok {
		return batchRequest{IDs: ids}, nil
	}
	var req batchRequest
	err := unmarshalStrict(body, &req)
	return req, err
}

// uniqueIDs validates the ids and returns them without duplicates, in
// first-seen order. The cap applies before folding duplicates, so it
// bounds the work of validation too.
func (req batchRequest) uniqueIDs(maxBatch int) ([]string, error) {
	if len(req.IDs) == 0 || len(req.IDs) > maxBatch {
		return nil, invalid("ids", "must list 1 to %d ids, got %d", maxBatch, len(req.IDs))
	}
	for i, id := range req.IDs {
		if err := driver.ValidateID(id); err != nil {
			return nil, renameField(err, fmt.Sprintf("ids[%d]", i))
		}
	}
	return driver.Distinct(req.IDs), nil
}

// batchScratch is what a batch read needs for its own and reuses across
// requests: a buffer for the body, then the answer (the body is copied
// into strings before the answer is written over it), and the drivers
// as encoded.
type batchScratch struct {
	buf     []byte
	drivers []driverJSON
}

// batchGet reads many drivers at once.
func (a *api) batchGet(w http.ResponseWriter, r *http.Request) {
	sc := a.scratch()
	defer a.release(sc)
	body, err := readJSONBody(w, r, a.cfg.MaxBodyBytes, sc.buf[:0])
	sc.buf = body
	if err != nil {
		a.fail(w, r, err)
		return
	}
	req, err := decodeBatchRequest(body, a.cfg.MaxBatch)
	if err != nil {
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
		Drivers: sc.drivers[:0],
		Missing: make([]string, 0, len(b.Missing)),
		Failed:  make([]failureJSON, 0, len(b.Failed)),
	}
	for _, d := range b.Drivers {
		resp.Drivers = append(resp.Drivers, newDriverJSON(d, a.rules, now))
	}
	sc.drivers = resp.Drivers
	resp.Missing = append(resp.Missing, b.Missing...)
	for _, f := range b.Failed {
		_, e := a.describe(r, f.Err, slog.String("driver_id", f.ID))
		resp.Failed = append(resp.Failed, failureJSON{ID: f.ID, Error: e})
	}
	out, err := resp.appendJSON(body[:0])
	sc.buf = out
	if err != nil {
		a.fail(w, r, fmt.Errorf("encode response: %w", err))
		return
	}
	writeBody(w, http.StatusOK, out)
}

// scratch is a batch read's scratch from the pool, or a new one.
func (a *api) scratch() *batchScratch {
	if sc, ok := a.batchScratch.Get().(*batchScratch); ok {
		return sc
	}
	return &batchScratch{drivers: make([]driverJSON, 0, 32)}
}

// release returns a scratch to the pool, unless it grew too large to
// keep. The drivers are cleared, so that the pool holds none alive.
func (a *api) release(sc *batchScratch) {
	if cap(sc.buf) > maxPooledBuffer || cap(sc.drivers) > maxPooledDrivers {
		return
	}
	clear(sc.drivers)
	sc.drivers = sc.drivers[:0]
	a.batchScratch.Put(sc)
}
