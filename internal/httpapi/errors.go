package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// Code is the stable, machine-readable error code of an error response.
// Clients branch on it; messages are for people and may change.
type Code string

// The error codes, each always sent with the same HTTP status.
const (
	CodeInvalidArgument         Code = "invalid_argument"           // 400
	CodeBadRequest              Code = "bad_request"                // 400, not well-formed HTTP; see WrapListener
	CodeUnauthorized            Code = "unauthorized"               // 401, an admin route without the admin token
	CodeNotFound                Code = "not_found"                  // 404
	CodeMethodNotAllowed        Code = "method_not_allowed"         // 405, with Allow
	CodeIllegalTransition       Code = "illegal_transition"         // 409, not worth retrying as is
	CodeConflict                Code = "conflict"                   // 409, retry
	CodePayloadTooLarge         Code = "payload_too_large"          // 413
	CodeUnsupportedMediaType    Code = "unsupported_media_type"     // 415
	CodeHighDemand              Code = "high_demand"                // 429, with Retry-After and retry_after_s
	CodeHeaderTooLarge          Code = "header_too_large"           // 431; see WrapListener
	CodeInternal                Code = "internal"                   // 500
	CodeNotImplemented          Code = "not_implemented"            // 501, an unsupported Transfer-Encoding; see WrapListener
	CodeUnavailable             Code = "unavailable"                // 503, with Retry-After
	CodeHTTPVersionNotSupported Code = "http_version_not_supported" // 505; see WrapListener
)

// Codes returns every Code.
func Codes() []Code {
	return []Code{
		CodeInvalidArgument, CodeBadRequest, CodeUnauthorized, CodeNotFound, CodeMethodNotAllowed, CodeIllegalTransition, CodeConflict,
		CodePayloadTooLarge, CodeUnsupportedMediaType, CodeHighDemand, CodeHeaderTooLarge, CodeInternal,
		CodeNotImplemented, CodeUnavailable, CodeHTTPVersionNotSupported,
	}
}

// Errors made by the transport itself; classify maps them like any other.
var (
	// errNoRoute: no pattern matches the path, whatever the method.
	errNoRoute = errors.New("httpapi: no such route")
	// errRecovered: a handler panicked; the panic is logged where recovered.
	errRecovered = errors.New("httpapi: handler panicked")
	// errBookingsDisabled: Deps.Bookings was nil; see bookingsDisabled.
	errBookingsDisabled = errors.New("httpapi: bookings are not enabled")
	// errSpampedeDisabled: AdminDeps.Spampede was nil.
	errSpampedeDisabled = errors.New("httpapi: spampede is not enabled")
)

// methodNotAllowedError: the path exists but not for this method.
type methodNotAllowedError struct {
	method string
	allow  []string
}

func (e *methodNotAllowedError) Error() string {
	return fmt.Sprintf("method %.16s not allowed; allowed: %s", e.method, strings.Join(e.allow, ", "))
}

// mediaTypeError: a body came without Content-Type application/json.
type mediaTypeError struct{ got string }

func (e *mediaTypeError) Error() string {
	if e.got == "" {
		return "Content-Type must be application/json, got none"
	}
	return fmt.Sprintf("Content-Type must be application/json, got %.64q", e.got)
}

// refusedError: net/http's server refused a request before any handler
// ran, answering status (see WrapListener). detail is what net/http said
// beyond the status text, e.g. "invalid header name"; it is one of
// net/http's fixed strings, never an echo of the request.
type refusedError struct {
	status int
	detail string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("net/http refused the request with %d: %.64s", e.status, e.detail)
}

// withDetail is msg followed by net/http's detail, if it gave one.
func (e *refusedError) withDetail(msg string) string {
	if e.detail == "" {
		return msg
	}
	return fmt.Sprintf("%s: %.64s", msg, e.detail)
}

// currentStatusError carries the driver's status alongside a refused
// transition whose error does not say it (*TransitionError does).
type currentStatusError struct {
	err    error
	status driver.Status
}

func (e *currentStatusError) Error() string { return e.err.Error() }
func (e *currentStatusError) Unwrap() error { return e.err }

// problem is how one error is shown to a client.
type problem struct {
	status     int
	code       Code
	message    string
	current    driver.Status // illegal_transition: the driver's current status, when known
	allow      string        // method_not_allowed: the Allow header
	retryAfter int           // high_demand: seconds, at least 1, in Retry-After and the body
	unexpected bool          // not a known error: log it, tell the client nothing
}

// classify is the one table from errors to responses. Messages are either
// fixed or come from error types made to be read by clients
// (*driver.InvalidArgumentError, *driver.TransitionError,
// *booking.HighDemandError, this package's own), never from an arbitrary
// error chain: a store error may hold addresses or keys. Rows are ordered
// most specific first.
func classify(err error) problem {
	var (
		tooLarge *http.MaxBytesError
		media    *mediaTypeError
		method   *methodNotAllowedError
		arg      *driver.InvalidArgumentError
		trans    *driver.TransitionError
		demand   *booking.HighDemandError
		refused  *refusedError
	)
	var p problem
	switch {
	case errors.As(err, &tooLarge):
		p = problem{status: http.StatusRequestEntityTooLarge, code: CodePayloadTooLarge, message: fmt.Sprintf("body must not exceed %d bytes", tooLarge.Limit)}
	case errors.As(err, &media):
		p = problem{status: http.StatusUnsupportedMediaType, code: CodeUnsupportedMediaType, message: media.Error()}
	case errors.As(err, &method):
		p = problem{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed, message: method.Error(), allow: strings.Join(method.allow, ", ")}
	// net/http's own refusals. A status not listed falls through to the
	// 500 below, and WrapListener then leaves net/http's answer as it is.
	case errors.As(err, &refused) && refused.status == http.StatusBadRequest:
		p = problem{status: http.StatusBadRequest, code: CodeBadRequest, message: refused.withDetail("malformed request")}
	case errors.As(err, &refused) && refused.status == http.StatusRequestHeaderFieldsTooLarge:
		p = problem{status: http.StatusRequestHeaderFieldsTooLarge, code: CodeHeaderTooLarge, message: "the request's header fields are too large"}
	case errors.As(err, &refused) && refused.status == http.StatusNotImplemented:
		p = problem{status: http.StatusNotImplemented, code: CodeNotImplemented, message: "the request's Transfer-Encoding is not supported"}
	case errors.As(err, &refused) && refused.status == http.StatusHTTPVersionNotSupported:
		p = problem{status: http.StatusHTTPVersionNotSupported, code: CodeHTTPVersionNotSupported, message: "the request's HTTP version is not supported; use HTTP/1.1"}
	case errors.Is(err, errUnauthorized):
		p = problem{status: http.StatusUnauthorized, code: CodeUnauthorized, message: "this route needs the admin token: send Authorization: Bearer <token>, the contents of the instance's --admin-token-file"}
	case errors.Is(err, errNoAdminToken):
		p = problem{status: http.StatusUnauthorized, code: CodeUnauthorized, message: "this instance was started without --admin-token-file, so the admin routes that change it or show its internals are closed"}
	case errors.Is(err, errNoRoute):
		p = problem{status: http.StatusNotFound, code: CodeNotFound, message: "no such route"}
	case errors.As(err, &demand):
		// Spampede turned the booking away before anything was stored:
		// retrying at once only adds to the spike, so say when to.
		p = problem{status: http.StatusTooManyRequests, code: CodeHighDemand, message: demand.Error(), retryAfter: retryAfterSeconds(demand.RetryAfter)}
	case errors.As(err, &arg):
		p = problem{status: http.StatusBadRequest, code: CodeInvalidArgument, message: arg.Error()}
	case errors.Is(err, driver.ErrInvalidArgument):
		p = problem{status: http.StatusBadRequest, code: CodeInvalidArgument, message: "invalid argument"}
	case errors.As(err, &trans):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition, current: trans.From,
			message: fmt.Sprintf("cannot %s from %s: %s", trans.Event, trans.From, trans.Reason)}
	case errors.Is(err, driver.ErrIllegalTransition):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition, message: "the transition is not allowed in the driver's status"}
	// The next four are refusals by the state machine too: the request is
	// well formed but the driver's state does not allow it, and retrying
	// the same request will not help.
	case errors.Is(err, driver.ErrWrongReservation):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition,
			message: "the driver no longer holds the reservation answered: it was answered or lapsed, and the booking may have reserved the driver again; read the driver"}
	case errors.Is(err, driver.ErrWrongBooking):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition, message: "the driver does not hold that booking"}
	case errors.Is(err, driver.ErrReservationExpired):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition, message: "the reservation has lapsed"}
	case errors.Is(err, driver.ErrReservationNotExpired):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition, message: "the reservation has not lapsed yet"}
	// The booking's own error says which statuses were involved; the
	// client can read the booking for that, so the message is fixed.
	case errors.Is(err, booking.ErrIllegal):
		p = problem{status: http.StatusConflict, code: CodeIllegalTransition, message: "the booking's status does not allow this change"}
	case errors.Is(err, booking.ErrChanging):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable,
			message: "the booking was changing while this request ran (its allocation still being recorded, or other updates), and the request may or may not have changed the driver: read the booking and the driver back, or send the request again"}
	case errors.Is(err, booking.ErrNotFound):
		p = problem{status: http.StatusNotFound, code: CodeNotFound, message: "booking not found"}
	case errors.Is(err, redisstore.ErrNotFound):
		p = problem{status: http.StatusNotFound, code: CodeNotFound, message: "driver not found"}
	case errors.Is(err, redisstore.ErrRulesConflict):
		p = problem{status: http.StatusConflict, code: CodeConflict, message: "the rules changed since the version you edited; GET them, reapply your edit and PUT again"}
	case errors.Is(err, redisstore.ErrConflict):
		p = problem{status: http.StatusConflict, code: CodeConflict, message: "the driver changed concurrently; try again"}
	// Before ErrUnavailable, which the store wraps around it: the change
	// (a booking, a driver's transition) is on a primary but could still be
	// lost in a failover, so it is not reported as done; a create retried
	// with the same key finds its booking.
	case errors.Is(err, redisroute.ErrUnconfirmed):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable,
			message: "the change reached the primary but no replica confirmed it in time, so a failover could still undo it: read it back to see whether it lasted; to create a booking, retry with the same Idempotency-Key"}
	case errors.Is(err, errBookingsDisabled):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "bookings are not enabled"}
	case errors.Is(err, errSpampedeDisabled):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "spampede is not enabled"}
	case errors.Is(err, errDeadlinePassed):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "the request's Apollo-Deadline had passed when it arrived; nothing was done"}
	case errors.Is(err, redisstore.ErrLate):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "the request's deadline passed before storage made one of its changes, which was not made (a change before it may have been): read back what you changed, or try again"}
	case errors.Is(err, redisstore.ErrFull):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "storage is out of memory (Redis reached its maxmemory) and refused a change, which was not made (a change before it may have been): try again later"}
	case errors.Is(err, redisstore.ErrCannotPersist):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "storage cannot save to disk (a Redis primary's last snapshot or append-only file write failed) and refused a change, which was not made (a change before it may have been): try again later"}
	case errors.Is(err, redisstore.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "storage is unavailable; try again"}
	case errors.Is(err, context.Canceled):
		// The client went away or the server is shutting down; nobody
		// may read this, and it is no fault of ours.
		p = problem{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "request cancelled"}
	case errors.Is(err, errRecovered):
		p = problem{status: http.StatusInternalServerError, code: CodeInternal, message: "internal error"}
	default:
		p = problem{status: http.StatusInternalServerError, code: CodeInternal, message: "internal error", unexpected: true}
	}
	if p.code == CodeIllegalTransition && p.current == "" {
		var cur *currentStatusError
		if errors.As(err, &cur) {
			p.current = cur.status
		}
	}
	return p
}

// retryAfterSeconds rounds d up to whole seconds, at least 1: Retry-After
// has no finer unit, and 0 would invite an immediate retry.
func retryAfterSeconds(d time.Duration) int {
	const most = 24 * 60 * 60 // a day; anything longer is a bug upstream
	s := math.Ceil(d.Seconds())
	switch {
	case !(s >= 1): // also NaN, which cannot happen
		return 1
	case s > most:
		return most
	}
	return int(s)
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Status is the driver's current status, on illegal_transition when known.
	Status driver.Status `json:"status,omitempty"`
	// RetryAfterS is, on high_demand, the seconds to wait before retrying:
	// the Retry-After header, for clients that only see the body.
	RetryAfterS int `json:"retry_after_s,omitempty"`
	// NotApplied is, on a 5xx of a write route, true when nothing the
	// request asked to change was changed: every write it sent was refused
	// (or none was sent). Absent, the outcome is unknown.
	NotApplied bool `json:"not_applied,omitempty"`
}

// responder writes responses: the JSON of answers and of errors. The public
// and the admin handlers share it, so both speak the same error format.
type responder struct {
	log *slog.Logger // receives unexpected errors
}

// describe classifies err for a response body, logging it if unexpected.
// Batch answers use it for per-item failures inside a 200.
func (a responder) describe(r *http.Request, err error, attrs ...slog.Attr) (problem, errorJSON) {
	p := classify(err)
	if p.unexpected {
		attrs = append(attrs, slog.String("route", r.Pattern), slog.String("request_id", RequestID(r.Context())), slog.Any("err", err))
		a.log.LogAttrs(r.Context(), slog.LevelError, "unexpected error", attrs...)
	}
	return p, errorJSON{Code: p.code, Message: p.message, Status: p.current, RetryAfterS: p.retryAfter}
}

// fail writes err as an error response. It is the only writer of error
// statuses in the package.
func (a responder) fail(w http.ResponseWriter, r *http.Request, err error) {
	p, body := a.describe(r, err)
	if t, ok := redisroute.TrackedWrites(r.Context()); ok && p.status >= 500 && !t.MaybeApplied() {
		body.NotApplied = true
	}
	if p.allow != "" {
		w.Header().Set("Allow", p.allow)
	}
	switch {
	case p.retryAfter > 0:
		w.Header().Set("Retry-After", strconv.Itoa(p.retryAfter))
	case p.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	b, err := json.Marshal(errorBody{Error: body})
	if err != nil { // cannot happen: the body is strings only
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	writeBody(w, p.status, b)
}

// failing is a handler that answers every request with err.
func (a responder) failing(err error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { a.fail(w, r, err) }
}
