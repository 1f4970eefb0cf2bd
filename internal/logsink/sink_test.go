package logsink_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/logsink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A pipe nobody reads takes 64 KiB and then blocks its writer: the Sink's
// Write returns all the same, keeps what fits in its buffer, drops and
// counts the rest, and says how many it dropped once the pipe is read.
func TestAWriteNeverWaitsForAPipeNobodyReads(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var s *logsink.Sink
	s = logsink.New(w, logsink.Config{MaxBuffered: 16 << 10, OnDropped: func(n uint64) {
		fmt.Fprintf(s, "dropped %d\n", n)
	}})
	line := strings.Repeat("x", 99) + "\n"
	const lines = 5000 // 500 KB: the pipe's 64 KiB and the buffer's 16 KiB many times over
	for range lines {
		if n, err := io.WriteString(s, line); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	dropped := s.Dropped()
	if dropped == 0 || dropped >= lines {
		t.Fatalf("dropped %d of %d lines, want some but not all", dropped, lines)
	}
	if got := metric(t, s, "apollo_log_lines_dropped_total"); got != float64(dropped) {
		t.Errorf("apollo_log_lines_dropped_total = %v, want %d", got, dropped)
	}

	read := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); read <- b }()
	if !s.Close(time.Minute) { // a hang, not a speed
		t.Fatal("Close did not flush once the pipe was read")
	}
	w.Close()
	out := <-read
	if kept := bytes.Count(out, []byte(line)); uint64(kept)+dropped != lines {
		t.Errorf("%d lines written and %d dropped, want %d in all", kept, dropped, lines)
	}
	// A note follows each write that went through after drops: their
	// counts add up to every line dropped.
	var said uint64
	for _, m := range regexp.MustCompile(`dropped (\d+)\n`).FindAllSubmatch(out, -1) {
		n, _ := strconv.ParseUint(string(m[1]), 10, 64)
		said += n
	}
	if said != dropped {
		t.Errorf("the notes say %d lines were dropped, the Sink counted %d; the output ends %q", said, dropped, out[max(0, len(out)-200):])
	}
}

// The line that says lines were dropped is written even though the
// buffer is full when the output takes lines again, as it is after a
// stall; a note dropped for want of room would say nothing, and the next
// one would count only the note.
func TestTheDropNoteIsKeptWhenTheBufferIsFull(t *testing.T) {
	bw := &blockingWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	var s *logsink.Sink
	var notes []uint64 // OnDropped runs on the Sink's goroutine only
	s = logsink.New(bw, logsink.Config{MaxBuffered: 1000, OnDropped: func(n uint64) {
		notes = append(notes, n)
		fmt.Fprintf(s, "dropped %d\n", n)
	}})
	io.WriteString(s, "first\n")
	<-bw.entered // the Sink's goroutine waits in the output's Write
	line := strings.Repeat("y", 99) + "\n"
	for range 50 {
		io.WriteString(s, line)
	}
	if got := s.Dropped(); got != 40 {
		t.Fatalf("dropped %d lines, want 40: 10 of 100 bytes fit in 1000", got)
	}
	close(bw.gate)
	if !s.Close(time.Minute) {
		t.Fatal("Close did not flush an output that takes lines again")
	}
	if len(notes) != 1 || notes[0] != 40 {
		t.Errorf("OnDropped was told %v, want [40]", notes)
	}
	if got := bw.String(); !strings.HasSuffix(got, "dropped 40\n") {
		t.Errorf("the output does not end with the note: %q", got[max(0, len(got)-100):])
	}
}

// Lines are written whole and in order, and nothing is dropped while the output keeps up.
func TestLinesAreWrittenWholeAndInOrder(t *testing.T) {
	var out lockedBuffer
	s := logsink.New(&out, logsink.Config{})
	var want strings.Builder
	for i := range 10000 {
		l := fmt.Sprintf("line %d\n", i)
		want.WriteString(l)
		io.WriteString(s, l)
	}
	if !s.Close(time.Minute) {
		t.Fatal("Close did not flush")
	}
	if out.String() != want.String() {
		t.Errorf("output differs from the lines written, in order (%d bytes, want %d)", len(out.String()), want.Len())
	}
	if s.Dropped() != 0 {
		t.Errorf("dropped %d lines from an output that keeps up", s.Dropped())
	}
}

// An output that refuses writes loses their lines and counts the writes;
// the Sink goes on.
func TestAFailingOutputIsCounted(t *testing.T) {
	s := logsink.New(failingWriter{}, logsink.Config{})
	io.WriteString(s, "lost\n")
	if !s.Close(time.Minute) {
		t.Fatal("Close did not end")
	}
	if got := metric(t, s, "apollo_log_write_errors_total"); got != 1 {
		t.Errorf("apollo_log_write_errors_total = %v, want 1", got)
	}
}

// Close gives up on an output that does not take what is queued; lines
// written meanwhile are queued, not waited for; and once the Sink has
// written everything, lines go straight to the output, in order.
func TestCloseGivesUpOnAnOutputThatDoesNotTakeItsLines(t *testing.T) {
	bw := &blockingWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	s := logsink.New(bw, logsink.Config{})
	io.WriteString(s, "queued\n")
	<-bw.entered
	if s.Close(50 * time.Millisecond) {
		t.Fatal("Close said it flushed into an output that blocks")
	}
	io.WriteString(s, "while closing\n")
	close(bw.gate)
	if !s.Close(time.Minute) {
		t.Fatal("a second Close did not wait for the output to take the rest")
	}
	io.WriteString(s, "after\n")
	if got, want := bw.String(), "queued\nwhile closing\nafter\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// metric is the value of s's counter name, gathered by a registry that
// checks the Sink's metrics as Prometheus would.
func metric(t *testing.T, s *logsink.Sink, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("%s is not collected", name)
	return 0
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("EIO") }

// blockingWriter takes nothing until its gate is closed, and says when a
// Write begins waiting.
type blockingWriter struct {
	gate, entered chan struct{}
	lockedBuffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.gate
	return b.lockedBuffer.Write(p)
}
