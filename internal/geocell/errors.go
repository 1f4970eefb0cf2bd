package geocell

import (
	"errors"
	"fmt"
)

// ErrInvalidArgument is matched (via errors.Is) by every error this package
// returns for bad input: coordinates, precision, radius, text form or bucket
// size. The error's own message says what was wrong in words fit for an API
// client.
var ErrInvalidArgument = errors.New("geocell: invalid argument")

// ErrTooManyCells is returned by CellsWithin when the circle would cover
// more cells than MaxCellsWithin; the caller should use a coarser precision.
// It also matches ErrInvalidArgument.
var ErrTooManyCells = errors.New("geocell: too many cells")

// argError carries a human message and matches ErrInvalidArgument, so
// callers can branch on the sentinel and still show the precise reason.
type argError struct {
	msg  string
	kind error // optional, more specific sentinel
}

func invalidf(format string, args ...any) error {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

func (e *argError) Error() string { return e.msg }

func (e *argError) Is(target error) bool {
	return target == ErrInvalidArgument || (e.kind != nil && target == e.kind)
}
