package driver

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is. The transport maps each to one status code.
var (
	// ErrInvalidArgument: the input itself is malformed (an ID, a location,
	// a service, an unknown status or event). Matched by *InvalidArgumentError.
	ErrInvalidArgument = errors.New("driver: invalid argument")

	// ErrIllegalTransition: the event is not allowed in the driver's current
	// state. Matched by *TransitionError.
	ErrIllegalTransition = errors.New("driver: illegal transition")

	// ErrWrongBooking: the event names a booking the driver does not hold.
	ErrWrongBooking = errors.New("driver: wrong booking")

	// ErrWrongReservation: the event names the booking the driver holds,
	// but an earlier reservation of it (Transition.Until), since answered
	// or lapsed: the booking reserved the driver again. It matches
	// ErrWrongBooking too.
	ErrWrongReservation = fmt.Errorf("%w: the reservation named is not the driver's", ErrWrongBooking)

	// ErrReservationNotExpired: expire arrived before ReservedUntil.
	ErrReservationNotExpired = errors.New("driver: reservation not expired")

	// ErrReservationExpired: accept or start_trip arrived at or after
	// ReservedUntil.
	ErrReservationExpired = errors.New("driver: reservation expired")

	// ErrInvalidServices: go_online with a missing or malformed service
	// list. Such errors also match ErrInvalidArgument.
	ErrInvalidServices = errors.New("driver: invalid services")
)

// TransitionError reports an event that the state machine does not allow
// from the driver's status. It matches ErrIllegalTransition.
type TransitionError struct {
	From   Status
	Event  Event
	Reason string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("driver: cannot %s from %s: %s", e.Event, e.From, e.Reason)
}

// Is makes errors.Is(err, ErrIllegalTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// InvalidArgumentError reports one malformed input in words fit for an API
// client: Error() is e.g. "lat must be within [-90, 90]". It matches
// ErrInvalidArgument, and Err (if set) for a more specific sentinel.
type InvalidArgumentError struct {
	Field  string // the input at fault, e.g. "lat", "booking_id"
	Reason string // what is wrong with it, e.g. "must be within [-90, 90]"
	Err    error  // optional more specific sentinel, e.g. ErrInvalidServices
}

func (e *InvalidArgumentError) Error() string { return e.Field + " " + e.Reason }

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *InvalidArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// Unwrap exposes the specific sentinel, if any.
func (e *InvalidArgumentError) Unwrap() error { return e.Err }

func invalidArg(field, format string, args ...any) *InvalidArgumentError {
	return &InvalidArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
