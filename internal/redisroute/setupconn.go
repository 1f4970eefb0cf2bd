package redisroute

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// A connection that fails before its first reply has carried nothing of a
// caller's: go-redis's first exchange on every new connection is its
// HELLO, answered before anything else is written. Yet go-redis reports
// such a failure as it would one in the middle of a pipeline (a reset, a
// broken pipe), and a write would then be reported as of unknown outcome.
//
// The common case is a node at maxclients (another application's
// connections filled it): Redis greets each new connection with
// "-ERR max number of clients reached" and closes it. go-redis takes that
// error for a HELLO the server does not know, goes on with AUTH or
// READONLY on the closed socket, and returns only the broken pipe, or the
// reset if it arrived before the greeting was read. Every write that needed
// a new connection then failed as unknown, though none ran, and none was
// sent again on the connections the node still served (found by a test
// that filled a primary's maxclients: a fifth of the writes failed).
//
// setUpHook wraps every connection the node's clients dial, so that an
// error met before the first reply is a setUpError: classified as unsent
// (or refused, after the maxclients greeting), so the write is sent again.
// It does not say the node is down, as a refused dial does: a node that
// accepts a connection and does not answer its HELLO in time may be slow
// (a fork), and the replication check keeps what it knew (replication.go).

// maxClientsGreeting begins what Redis writes to a connection it accepts
// over maxclients, before it closes it: "-ERR max number of clients
// reached", or in cluster mode "-ERR max number of clients + cluster
// connections reached" (which go-redis's IsMaxClientsError does not know).
var maxClientsGreeting = []byte("-" + maxClientsReply)

const maxClientsReply = "ERR max number of clients "

// setUpError is an error a connection met before its first reply. It
// does not unwrap: go-redis hands on a set-up failure's errors.Unwrap
// (dropping its own "failed to authenticate" wrapping), which would drop
// this mark too.
type setUpError struct {
	err  error
	full bool // the node greeted it with its maxclients refusal
}

func (e *setUpError) Error() string {
	if e.full {
		return "redis: the node refused a new connection, max number of clients reached: " + e.err.Error()
	}
	return "redis: a new connection failed before its first reply: " + e.err.Error()
}

// Timeout and Temporary keep go-redis's net.Error checks (it asserts the
// error's type, not errors.As) seeing what it would have.
func (e *setUpError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

func (e *setUpError) Temporary() bool { return false }

// isSetUpFailure reports an error met before a connection's first reply:
// nothing was sent on it. full says the node refused it at maxclients.
func isSetUpFailure(err error) (failed, full bool) {
	var se *setUpError
	if !errors.As(err, &se) {
		return false, false
	}
	return true, se.full
}

// isTLSRefusal: the node refused a new connection's TLS handshake with an
// alert (a client certificate expired, unknown to its CA, or missing),
// before the first reply: to Apollo, a refusal of its credentials. Under
// TLS 1.3 the alert comes on the first read, under 1.2 in the dial.
func isTLSRefusal(err error) bool {
	var se *setUpError
	var op *net.OpError
	return errors.As(err, &se) && errors.As(se.err, &op) && op.Op == "remote error"
}

// setUpHook is a go-redis hook that wraps each dialled connection.
type setUpHook struct{}

func (setUpHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err != nil {
			// Over TLS the handshake is part of the dial, and a full node
			// closes the connection before it, with no greeting: whatever
			// failed, nothing was sent.
			if !isUnsent(err) {
				err = &setUpError{err: err}
			}
			return nil, err
		}
		w := &setUpConn{Conn: cn}
		// go-redis checks an idle connection through its file descriptor
		// (a peek), and only when the connection offers one: keep it.
		if sc, ok := cn.(syscall.Conn); ok {
			return &setUpSyscallConn{setUpConn: w, sc: sc}, nil
		}
		return w, nil
	}
}

func (setUpHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (setUpHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// setUpConn marks the errors of a connection until its first reply.
type setUpConn struct {
	net.Conn
	replied atomic.Bool // a first reply arrived that was not a refusal
	full    atomic.Bool // the first reply was the maxclients refusal
}

func (c *setUpConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.replied.Load() {
		switch {
		case n == 0:
		case !c.full.Load() && isGreetingAlone(b[:n]):
			c.full.Store(true)
		default:
			// A reply, or anything after a greeting (which Redis never
			// sends: it closes the connection): from here on, errors are
			// ordinary.
			c.full.Store(false)
			c.replied.Store(true)
			return n, err
		}
		return n, c.mark(err)
	}
	return n, err
}

func (c *setUpConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if !c.replied.Load() {
		return n, c.mark(err)
	}
	return n, err
}

// isGreetingAlone reports a read of the maxclients greeting line and
// nothing after it.
func isGreetingAlone(b []byte) bool {
	end := bytes.Index(b, []byte("\r\n"))
	return bytes.HasPrefix(b, maxClientsGreeting) && end == len(b)-2
}

func (c *setUpConn) mark(err error) error {
	if err == nil {
		return nil
	}
	return &setUpError{err: err, full: c.full.Load()}
}

// setUpSyscallConn is a setUpConn over a connection with a descriptor.
type setUpSyscallConn struct {
	*setUpConn
	sc syscall.Conn
}

func (c *setUpSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }
