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
	// ErrFull: a primary is at its maxmemory and refused the write (OOM)
	// before anything ran. It comes wrapped in ErrUnavailable: the
	// cluster cannot take writes there until it has room.
	ErrFull = errors.New("redis is out of memory (maxmemory reached): the write was refused and nothing was written")
	// ErrCannotPersist: a primary whose last snapshot or append-only file
	// write failed (a full disk, a directory it may no longer write)
	// refused the write (MISCONF) before anything ran. It comes wrapped
	// in ErrUnavailable: the shard takes no write until Redis persists
	// again.
	ErrCannotPersist = errors.New("redis cannot persist to disk (its last snapshot or AOF write failed): the write was refused and nothing was written")
)
