package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// TestErrorMapping specifies the one table from errors to responses, as a
// client sees it: the store fails GET /v1/drivers/{id} with each error.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   httpapi.Code
		wantMsg    string        // the whole message
		wantDriver driver.Status // error.status
		wantLogged bool          // logged as unexpected
	}{
		{"not found", redisstore.ErrNotFound, 404, httpapi.CodeNotFound, "driver not found", "", false},
		{"not found, wrapped", fmt.Errorf("get drv-1 on 10.0.0.7: %w", redisstore.ErrNotFound), 404, httpapi.CodeNotFound, "driver not found", "", false},
		{"conflict", redisstore.ErrConflict, 409, httpapi.CodeConflict, "the driver changed concurrently; try again", "", false},
		{"unavailable", redisstore.ErrUnavailable, 503, httpapi.CodeUnavailable, "storage is unavailable; try again", "", false},
		{"late", fmt.Errorf("%w: %w", redisstore.ErrUnavailable, redisstore.ErrLate), 503, httpapi.CodeUnavailable,
			"the request's deadline passed before storage made one of its changes, which was not made (a change before it may have been): read back what you changed, or try again", "", false},
		{"out of memory", fmt.Errorf("%w: %w", redisstore.ErrUnavailable, redisstore.ErrFull), 503, httpapi.CodeUnavailable,
			"storage is out of memory (Redis reached its maxmemory) and refused a change, which was not made (a change before it may have been): try again later", "", false},
		{"cannot persist", fmt.Errorf("%w: %w", redisstore.ErrUnavailable, redisstore.ErrCannotPersist), 503, httpapi.CodeUnavailable,
			"storage cannot save to disk (a Redis primary's last snapshot or append-only file write failed) and refused a change, which was not made (a change before it may have been): try again later", "", false},
		{"deadline", fmt.Errorf("hgetall: %w", context.DeadlineExceeded), 503, httpapi.CodeUnavailable, "storage is unavailable; try again", "", false},
		{"cancelled", context.Canceled, 503, httpapi.CodeUnavailable, "request cancelled", "", false},
		{"transition", &driver.TransitionError{From: driver.StatusOffline, Event: driver.EventAccept, Reason: "not allowed"},
			409, httpapi.CodeIllegalTransition, "cannot accept from offline: not allowed", driver.StatusOffline, false},
		{"bare illegal transition", fmt.Errorf("lua: %w", driver.ErrIllegalTransition),
			409, httpapi.CodeIllegalTransition, "the transition is not allowed in the driver's status", "", false},
		{"wrong booking", fmt.Errorf("booking bk-7 held: %w", driver.ErrWrongBooking),
			409, httpapi.CodeIllegalTransition, "the driver does not hold that booking", "", false},
		{"lapsed", driver.ErrReservationExpired, 409, httpapi.CodeIllegalTransition, "the reservation has lapsed", "", false},
		{"not lapsed", driver.ErrReservationNotExpired, 409, httpapi.CodeIllegalTransition, "the reservation has not lapsed yet", "", false},
		{"invalid argument", driver.ValidateLocation(91, 0), 400, httpapi.CodeInvalidArgument, "lat must be within [-90, 90]", "", false},
		{"invalid argument, wrapped", fmt.Errorf("store: %w", driver.ValidateServices(nil)),
			400, httpapi.CodeInvalidArgument, "services must list 1 to 16 services", "", false},
		{"bare invalid argument", fmt.Errorf("key {drv}:10.0.0.7: %w", driver.ErrInvalidArgument), 400, httpapi.CodeInvalidArgument, "invalid argument", "", false},
		{"too large", &http.MaxBytesError{Limit: 10}, 413, httpapi.CodePayloadTooLarge, "body must not exceed 10 bytes", "", false},
		{"unknown", errors.New("dial tcp 10.0.0.7:6379: connection refused"), 500, httpapi.CodeInternal, "internal error", "", true},
		{"unknown, joined with nothing known", errors.Join(errors.New("node 10.0.0.7 down"), errors.New("retry failed")), 500, httpapi.CodeInternal, "internal error", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFake(seedDrivers()...)
			store.err = tt.err
			h := newHarness(t, store, nil)
			rec := h.do(request{method: "GET", target: "/v1/drivers/drv-1"})

			e := decodeError(t, rec)
			if rec.Code != tt.wantStatus || e.Error.Code != tt.wantCode || e.Error.Message != tt.wantMsg || e.Error.Status != string(tt.wantDriver) {
				t.Errorf("got %d %+v\nwant %d {Code:%s Message:%s Status:%s}", rec.Code, e.Error, tt.wantStatus, tt.wantCode, tt.wantMsg, tt.wantDriver)
			}
			if retry := rec.Header().Get("Retry-After"); (retry == "1") != (tt.wantStatus == 503) {
				t.Errorf("Retry-After = %q with status %d", retry, rec.Code)
			}
			if strings.Contains(rec.Body.String(), "10.0.0.7") {
				t.Errorf("internal detail leaked: %s", rec.Body)
			}
			logs := h.logs.String()
			if logged := strings.Contains(logs, `"msg":"unexpected error"`); logged != tt.wantLogged {
				t.Errorf("logged as unexpected = %v, want %v; logs:\n%s", logged, tt.wantLogged, logs)
			}
			if tt.wantLogged && !strings.Contains(logs, "10.0.0.7") {
				t.Errorf("the log must keep what the client is not told; logs:\n%s", logs)
			}
		})
	}
}

// TestCodesAreDistinct: a client branches on the code alone. (The spec test
// checks that the spec's enum lists exactly these codes.)
func TestCodesAreDistinct(t *testing.T) {
	seen := map[httpapi.Code]bool{}
	for _, c := range httpapi.Codes() {
		if seen[c] {
			t.Errorf("code %q listed twice", c)
		}
		seen[c] = true
	}
}
