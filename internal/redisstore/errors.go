package redisstore

import "errors"

// Errors returned by the store (compare with errors.Is).
var (
	// ErrNotFound: no such record.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the record kept changing under us; the caller may retry.
	ErrConflict = errors.New("concurrent update: try again")
	// ErrUnavailable: Redis could not serve the request in time.
	ErrUnavailable = errors.New("storage unavailable")
)
