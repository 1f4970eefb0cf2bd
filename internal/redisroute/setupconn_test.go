package redisroute

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A connection that fails before its first reply carried nothing of the
// caller's: its command is unsent (or refused, when the node greeted it
// with its maxclients refusal), and may be sent again. go-redis alone
// reports each such failure as a command sent and unanswered (want
// without the hook), and a write's outcome as unknown.
func TestAConnectionThatFailsBeforeItsFirstReplySentNothing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		password      string
		node          func(net.Conn) // the node's side of the connection
		want, without class
	}{
		{"greeted with the maxclients refusal, then closed (AUTH on the closed socket)", "secret",
			greet("-ERR max number of clients reached"), classRefused, classUnanswered},
		{"greeted with cluster mode's maxclients refusal, no password (READONLY on the closed socket)", "",
			greet("-ERR max number of clients + cluster connections reached"), classRefused, classUnanswered},
		{"reset before any reply", "", resetAtOnce, classUnsent, anyClass}, // alone: a dial error, or a reset after HELLO was sent
		{"closed after its set-up, before the command's reply", "", answerSetUpThenClose, classUnanswered, classUnanswered},
		{"greeted, then answered (Redis never does: it closes): no refusal", "", greetThenServe, classUnanswered, classUnanswered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(setUpErr(t, tc.password, tc.node, true)); got != tc.want {
				t.Errorf("with the hook: class %d, want %d", got, tc.want)
			}
			if got := classify(setUpErr(t, tc.password, tc.node, false)); tc.without != anyClass && got != tc.without {
				t.Errorf("without the hook: class %d, want %d (go-redis alone)", got, tc.without)
			}
		})
	}
}

// anyClass: what go-redis alone reports varies with timing.
const anyClass class = -1

// setUpErr is the error of a GET by a client set up as the router's
// (READONLY on connect), with the set-up hook or without, on a node that
// plays its side of the connection with node.
func setUpErr(t *testing.T, password string, node func(net.Conn), hook bool) error {
	t.Helper()
	addr, wait := serveOnce(t, node)
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialerRetries: 1, ReadTimeout: 2 * time.Second,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	defer c.Close()
	if hook {
		c.AddHook(setUpHook{})
	}
	err := c.Get(context.Background(), "k").Err()
	wait()
	return err
}

// serveOnce listens on a loopback port, plays the node's side of the first
// connection with node, and closes the listener; wait returns once node
// has.
func serveOnce(t *testing.T, node func(net.Conn)) (addr string, wait func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		node(c)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), func() { <-done }
}

// greet writes line to the connection and closes it, as Redis does to a
// connection over its maxclients.
func greet(line string) func(net.Conn) {
	return func(c net.Conn) {
		_, _ = io.WriteString(c, line+"\r\n")
		c.Close()
	}
}

// resetAtOnce closes the connection with a reset, before reading anything.
func resetAtOnce(c net.Conn) {
	_ = c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

// greetThenServe greets the connection with the maxclients refusal, then
// answers READONLY and closes the connection when the GET arrives: a
// node that kept a greeted connection, whose later errors are ordinary.
func greetThenServe(c net.Conn) {
	_, _ = io.WriteString(c, "-ERR max number of clients reached\r\n")
	serveSetUpThenClose(c, false) // the greeting was HELLO's answer, to the client
}

// A dial that fails says nothing was sent; one refused (or not made at
// all) also says the node takes no connection, while one that reached the
// node and failed its set-up (over TLS the handshake is part of the dial)
// says only that nothing was sent. A handshake the node refused with a
// TLS alert (our client certificate expired) is a refusal of our
// credentials too.
func TestADialThatFailsSentNothing(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name    string
		err     error
		want    class
		refuses bool
		auth    bool
	}{
		{"refused", refused, classUnsent, true, false},
		{"the TLS handshake cut off", io.EOF, classUnsent, false, false},
		{"the TLS handshake reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, classUnsent, false, false},
		{"the client certificate refused", &net.OpError{Op: "remote error", Err: errors.New("tls: expired certificate")}, classUnsent, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial := setUpHook{}.DialHook(func(context.Context, string, string) (net.Conn, error) { return nil, tc.err })
			_, err := dial(context.Background(), "tcp", "n:1")
			if got := classify(err); got != tc.want {
				t.Errorf("class %d, want %d (%v)", got, tc.want, err)
			}
			if got := refusesConnections(err); got != tc.refuses {
				t.Errorf("refusesConnections = %v, want %v (%v)", got, tc.refuses, err)
			}
			if got := isAuthRefusal(err); got != tc.auth {
				t.Errorf("isAuthRefusal = %v, want %v (%v)", got, tc.auth, err)
			}
		})
	}
	if refusesConnections(&setUpError{err: io.EOF, full: true}) {
		t.Error("a full node's greeting read as a node that takes no connection")
	}
}

// answerSetUpThenClose answers HELLO (unknown, as Redis 5 does) and
// READONLY, then closes the connection when the GET arrives.
func answerSetUpThenClose(c net.Conn) { serveSetUpThenClose(c, true) }

// serveSetUpThenClose answers READONLY, and HELLO if answerHello, then
// closes the connection when any other command arrives.
func serveSetUpThenClose(c net.Conn, answerHello bool) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		switch strings.ToUpper(cmd[0]) {
		case "HELLO":
			if answerHello {
				_, _ = io.WriteString(c, "-ERR unknown command 'HELLO'\r\n")
			}
		case "READONLY":
			_, _ = io.WriteString(c, "+OK\r\n")
		default:
			return
		}
	}
}
