package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/httpapi"
)

// recorder sends operations to Apollo instances and records each one: its
// invocation and response times, what came back, and what the client can
// conclude about whether it took effect.
type recorder struct {
	start   time.Time
	timeout time.Duration
	// deadlines: the instances honour Apollo-Deadline, so each write's
	// deadline is recorded (see Op.Deadline).
	deadlines bool
	client    *http.Client
	// next, when set, is the instance after one in the fleet: a request
	// whose connection an instance refused (never sent) goes to the next,
	// as a load balancer retries a refused connection, until one takes it
	// or every one of tries has refused.
	next  func(api string) string
	tries int

	mu  sync.Mutex
	ops []Op
}

func newRecorder(start time.Time, timeout time.Duration, deadlines bool) *recorder {
	return &recorder{start: start, timeout: timeout, deadlines: deadlines, client: &http.Client{Timeout: timeout}, tries: 1}
}

func (r *recorder) since() int64 { return time.Since(r.start).Nanoseconds() }

// answer is the parts of a booking or driver answer the checker uses.
type answer struct {
	Status        string    `json:"status"`
	DriverID      string    `json:"driver_id"`
	BookingID     string    `json:"booking_id"`
	Accepted      bool      `json:"accepted"`
	Withdrawn     bool      `json:"withdrawn"`
	Version       int64     `json:"version"`
	ReservedUntil time.Time `json:"reserved_until"`
	Deadline      time.Time `json:"deadline"`
	Error         struct {
		Code       string `json:"code"`
		NotApplied bool   `json:"not_applied"`
	} `json:"error"`
}

func (a answer) state() State {
	s := State{Status: a.Status, DriverID: a.DriverID, BookingID: a.BookingID, Accepted: a.Accepted, Withdrawn: a.Withdrawn, Version: a.Version}
	if !a.ReservedUntil.IsZero() {
		s.ReservedUntil = a.ReservedUntil.UnixMilli()
	}
	if !a.Deadline.IsZero() {
		s.Deadline = a.Deadline.UnixMilli()
	}
	return s
}

// do sends one request for op (Kind, Client, Instance and the entity IDs
// set) and records it. headers may carry the Idempotency-Key.
func (r *recorder) do(ctx context.Context, op Op, method, path string, body any, headers map[string]string) Op {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	var deadline time.Time
	if !op.Kind.isRead() {
		// The client waits until then; Apollo makes the write's changes
		// before it or never, which bounds an unknown outcome.
		deadline = time.Now().Add(r.timeout)
		if r.deadlines {
			op.Deadline = deadline.Sub(r.start).Nanoseconds()
		}
	}
	op.Invoke = r.since()
	resp, err := r.send(ctx, &op, method, path, raw, headers, deadline)
	op.Return = r.since()
	var a answer
	if err == nil {
		op.Status = resp.StatusCode
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a)
		resp.Body.Close()
		op.Code, op.NotApplied = a.Error.Code, a.Error.NotApplied
	}
	op.Outcome = outcomeOf(op.Kind, op.Status, op.NotApplied, err)
	if op.Outcome == OK && op.Status < 300 {
		op.Seen = a.state()
	}
	if errors.Is(err, context.Canceled) && op.Kind.isRead() {
		return op // the run ended: a read that never answered says nothing
	}
	r.mu.Lock()
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
	r.mu.Unlock()
	return op
}

// send sends op's request to op.Instance and, while the connection is
// refused and a balancer is modelled (next), to the instances after it;
// op.Instance is left naming the last one tried.
func (r *recorder) send(ctx context.Context, op *Op, method, path string, raw []byte, headers map[string]string, deadline time.Time) (*http.Response, error) {
	for try := 1; ; try++ {
		var rd io.Reader
		if raw != nil {
			rd = bytes.NewReader(raw)
		}
		req, err := http.NewRequestWithContext(ctx, method, op.Instance+path, rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		if !deadline.IsZero() {
			// One recorded operation is one request: net/http replays a
			// request with an Idempotency-Key whose connection broke
			// before an answer, and would record only the replay's answer,
			// which may say not_applied of a first attempt that was
			// applied. (A refused connection sent nothing: trying the next
			// instance is not a replay.)
			req.GetBody = nil
			req.Header.Set(httpapi.DeadlineHeader, strconv.FormatInt(deadline.UnixMilli(), 10))
		}
		// net/http sends some requests again on a new connection when the
		// one it reused broke after they were written (a GET, a request
		// with an Idempotency-Key and no body), and the new one's dial
		// error is all it returns: whether anything was written is asked
		// of the transport itself.
		var wrote atomic.Bool
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}))
		resp, err := r.client.Do(req)
		if err != nil && wrote.Load() && neverSent(err) {
			// %v: a request that was written may have been done.
			err = fmt.Errorf("sent, then its connection failed: %v", err)
		}
		if err == nil || !neverSent(err) || r.next == nil || try >= r.tries {
			return resp, err
		}
		op.Instance = r.next(op.Instance)
	}
}

func (k Kind) isRead() bool { return k == ReadBooking || k == ReadDriver }

// outcomeOf decides what an answer proves. A read either answered or says
// nothing (Failed: it changed nothing). A write answered 2xx happened; a
// 4xx rejected it before it changed anything; a 5xx or no answer at all
// leaves it unknown: the write may have been applied before the failure,
// unless Apollo said it was not (notApplied: every write the request sent
// was refused), or the request never left (no connection could be made:
// an instance killed, not yet listening). A 404 read is an OK read of
// "absent".
func outcomeOf(k Kind, status int, notApplied bool, err error) Outcome {
	switch {
	case err != nil || status == 0:
		if k.isRead() || neverSent(err) {
			return Failed
		}
		return Unknown
	case status < 300:
		return OK
	case k.isRead() && status == http.StatusNotFound:
		return OK
	case k.isRead():
		return Failed
	case status < 500, notApplied:
		return Failed
	default:
		return Unknown
	}
}

// count is how many operations are recorded so far.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

func (r *recorder) history() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// neverSent reports a request that failed before its connection was made,
// so Apollo never saw it. A failure on a connection already open (reused,
// or reset after the request was written) may come after Apollo read it.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
