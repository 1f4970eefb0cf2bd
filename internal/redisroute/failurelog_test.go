package redisroute_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// failureLog counts the distinct failures a load saw, so a test that finds
// failed reads can say which errors, from which nodes, and when: a rare
// failure in CI is only worth having if it can be diagnosed from the log.
type failureLog struct {
	start time.Time
	mu    sync.Mutex
	seen  map[string]*failureSeen
}

type failureSeen struct {
	n           int
	first, last time.Duration
}

func newFailureLog(start time.Time) *failureLog {
	return &failureLog{start: start, seen: map[string]*failureSeen{}}
}

// reader is apolloReader that records every failed command.
func (l *failureLog) reader(r *redisroute.Router) drill.Reader {
	return func(ctx context.Context, keys []string) int {
		res := r.Exec(ctx, hmgets(keys))
		for _, x := range res {
			if x.Err != nil {
				l.add(fmt.Sprintf("%s via %s: %v", x.Node, x.Via, x.Err))
			}
		}
		return res.OK()
	}
}

func (l *failureLog) add(what string) {
	at := time.Since(l.start)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen[what]
	if s == nil {
		s = &failureSeen{first: at}
		l.seen[what] = s
	}
	s.n++
	s.last = at
}

// String lists the failures, most frequent first.
func (l *failureLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	what := make([]string, 0, len(l.seen))
	for w := range l.seen {
		what = append(what, w)
	}
	sort.Slice(what, func(i, j int) bool { return l.seen[what[i]].n > l.seen[what[j]].n })
	var b strings.Builder
	for i, w := range what {
		if i == 20 {
			fmt.Fprintf(&b, "\n  … %d more kinds", len(what)-i)
			break
		}
		s := l.seen[w]
		fmt.Fprintf(&b, "\n  %d× between %s and %s: %s", s.n, s.first.Round(time.Millisecond), s.last.Round(time.Millisecond), w)
	}
	return b.String()
}
