// Package logsink is the process's log output: a writer that never makes
// its caller wait for the file or pipe behind it.
//
// Go's log handlers write each line to their output before they return,
// and a request logs its access line before its answer is flushed. So
// when nobody reads the process's stderr (a log collector that stopped, a
// container runtime's full log buffer, a terminal paused with Ctrl-S)
// every request, and every background loop that logs, waited on the pipe:
// the instance still answered its health checks and took traffic, and
// answered none of it. A Sink queues lines in a bounded buffer and writes
// them from a goroutine of its own, as many as are queued in one write;
// while the output does not take them, lines beyond the buffer are
// dropped and counted, and once it takes them again the Sink reports how
// many were lost (through Config.OnDropped, which logs a line).
package logsink

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxBuffered is how much a Sink holds while its output does not
// take it: a few thousand lines, a few seconds of a busy instance.
const DefaultMaxBuffered = 1 << 20

// noteRoom is the room kept beyond the buffer for the line that says how
// many were dropped.
const noteRoom = 4 << 10

// Config shapes a Sink.
type Config struct {
	// MaxBuffered is the most bytes queued; a line that would go beyond
	// it is dropped. DefaultMaxBuffered when 0.
	MaxBuffered int
	// OnDropped is called, from the Sink's goroutine, after a write
	// succeeds that follows lines dropped since the last call: lines is
	// how many. It may write to the Sink.
	OnDropped func(lines uint64)
}

// Sink is an io.Writer whose Write never waits for its output. Each Write
// is one line (as slog's handlers write them) and is kept whole or
// dropped whole. It is also a prometheus.Collector of what it dropped.
type Sink struct {
	out       io.Writer
	max       int
	onDropped func(uint64)

	mu      sync.Mutex
	queued  []byte // lines not yet handed to the output
	spare   []byte // the buffer last written, reused for the next batch
	closing bool   // Close was called
	ended   bool   // the goroutine wrote its last batch: Write goes straight to out
	noting  bool   // OnDropped runs: its line may use noteRoom beyond max
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	dropped  atomic.Uint64 // lines dropped, ever
	reported uint64        // dropped already passed to onDropped (the goroutine's)
	failures atomic.Uint64 // writes the output refused

	droppedDesc, failuresDesc *prometheus.Desc
}

// New starts a Sink writing to out; Close stops it.
func New(out io.Writer, cfg Config) *Sink {
	s := &Sink{out: out, max: cfg.MaxBuffered, onDropped: cfg.OnDropped,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		droppedDesc: prometheus.NewDesc("apollo_log_lines_dropped_total",
			"Log lines dropped because the log output (stderr) did not take them: nobody read it for as long as the buffer lasted.", nil, nil),
		failuresDesc: prometheus.NewDesc("apollo_log_write_errors_total",
			"Writes to the log output (stderr) that failed; their lines are lost.", nil, nil)}
	if s.max <= 0 {
		s.max = DefaultMaxBuffered
	}
	go s.run() // owned by the Sink: ends in Close
	return s
}

// Write queues p (one line) and returns at once. A line that does not fit
// in what is left of the buffer is dropped and counted; Write still
// reports it written, as an error would be ignored by the logger anyway.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return s.out.Write(p) // the process is ending: nothing left to wait for it
	}
	limit := s.max
	if s.noting {
		limit += noteRoom
	}
	if len(s.queued)+len(p) > limit {
		s.mu.Unlock()
		s.dropped.Add(1)
		return len(p), nil
	}
	s.queued = append(s.queued, p...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // already woken
	}
	return len(p), nil
}

// Close writes what is queued and stops the Sink, waiting at most wait
// for an output that does not take it (the process is ending; a later
// Close waits again). Lines written after Close go straight to the
// output, after what was queued. It reports whether everything queued
// was written; if not, lines go on being queued (or dropped), never
// waited for.
func (s *Sink) Close(wait time.Duration) bool {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	s.mu.Unlock()
	if first {
		close(s.stop)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-t.C:
		return false
	}
}

// Dropped is how many lines were dropped so far.
func (s *Sink) Dropped() uint64 { return s.dropped.Load() }

// run writes what is queued, a batch at a time, until Close.
func (s *Sink) run() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
			s.flush()
		case <-s.stop:
			s.flushAll()
			return
		}
	}
}

// flushAll writes what is queued until nothing is, then lets later lines
// go straight to the output, after everything queued before them.
func (s *Sink) flushAll() {
	for {
		s.flush()
		s.mu.Lock()
		if len(s.queued) == 0 {
			s.ended = true
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// flush hands everything queued to the output in one write.
func (s *Sink) flush() {
	s.mu.Lock()
	batch := s.queued
	s.queued = s.spare[:0]
	s.mu.Unlock()
	var err error
	if len(batch) > 0 {
		if _, err = s.out.Write(batch); err != nil {
			s.failures.Add(1) // its lines are lost: the output refuses them
		}
	}
	s.mu.Lock()
	if cap(batch) <= s.max { // keep a buffer the size of a burst, not of a stall
		s.spare = batch[:0]
	} else {
		s.spare = nil
	}
	s.mu.Unlock()
	if err == nil {
		s.report()
	}
}

// report tells OnDropped of lines dropped since it was last told, now
// that a write went through. Its line is queued like any other.
func (s *Sink) report() {
	d := s.dropped.Load()
	if d == s.reported || s.onDropped == nil {
		return
	}
	n := d - s.reported
	s.reported = d
	// The buffer is most likely full right now (the output has just taken
	// a batch after a stall): the line that says so must not be dropped
	// for the want of room.
	s.mu.Lock()
	s.noting = true
	s.mu.Unlock()
	s.onDropped(n)
	s.mu.Lock()
	s.noting = false
	s.mu.Unlock()
}

// Describe and Collect make the Sink a prometheus.Collector.
func (s *Sink) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.droppedDesc
	ch <- s.failuresDesc
}

func (s *Sink) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(s.droppedDesc, prometheus.CounterValue, float64(s.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(s.failuresDesc, prometheus.CounterValue, float64(s.failures.Load()))
}
