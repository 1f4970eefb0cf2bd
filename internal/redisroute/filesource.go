package redisroute

import (
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// fileSource reads a secret from files for every new connection (a
// connection authenticates once, when it is made), so that a secret a
// secret manager rewrites — a rotated password, a renewed certificate —
// is used from the next connection on, without a restart. Files that
// cannot be read keep the value read before: a rotation does not go
// through an empty secret, and a connection made with the last good value
// is no worse than the connections already open. Each change and each
// failure to read is logged once, and counted.
type fileSource[T any] struct {
	what    string // says which, in logs: "redis password file"
	files   []string
	load    func() (T, error)
	same    func(a, b T) bool
	changed func(T) // told each new value (not the first); may be nil
	errors  prometheus.Counter
	log     *slog.Logger

	mu      sync.Mutex
	last    T
	failing bool // the last read failed (logged once until one succeeds)
	// Reads are numbered when they begin: one that ends after a newer one
	// has been taken into account is not (it may hold the value from
	// before a rewrite), and a read that hangs (a stuck network mount)
	// holds up no other.
	begun, applied uint64
}

// from starts s with the value first, read at start.
func (s *fileSource[T]) from(first T) *fileSource[T] {
	s.last = first
	return s
}

// get reads the files and returns their value, or the last good one.
func (s *fileSource[T]) get() T {
	s.mu.Lock()
	s.begun++
	n := s.begun
	s.mu.Unlock()
	v, err := s.load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < s.applied {
		return s.last
	}
	s.applied = n
	if err != nil {
		s.errors.Inc()
		if !s.failing {
			s.failing = true
			s.log.Warn(s.what+" cannot be read; new connections keep what was read before", "files", s.files, "error", err)
		}
		return s.last
	}
	if s.failing {
		s.failing = false
		s.log.Info(s.what+" can be read again", "files", s.files)
	}
	if !s.same(v, s.last) {
		s.last = v
		s.log.Info(s.what+" changed; new connections use it", "files", s.files)
		if s.changed != nil {
			s.changed(v)
		}
	}
	return v
}
