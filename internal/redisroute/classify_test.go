package redisroute

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// replyErr is the error go-redis reports for a GET that a node answers
// with line, as parsed by the real client from a real socket.
func replyErr(t *testing.T, line string) error {
	t.Helper()
	f := startFakeRESP(t, func(cmd []string) string {
		if strings.EqualFold(cmd[0], "hello") {
			return "-ERR unknown command 'HELLO'"
		}
		return line
	})
	c := redis.NewClient(&redis.Options{Addr: f.addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	defer c.Close()
	return c.Get(context.Background(), "k").Err()
}

// handshakeErr is the error of a command on a connection whose set-up the
// node refuses: HELLO and AUTH answered with line.
func handshakeErr(t *testing.T, password, line string) error {
	t.Helper()
	f := startFakeRESP(t, func(cmd []string) string {
		return line // HELLO, AUTH and every later command alike
	})
	c := redis.NewClient(&redis.Options{Addr: f.addr(), Password: password, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	return c.Get(context.Background(), "k").Err()
}

func closedPortErr(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	return c.Get(context.Background(), "k").Err()
}

// dialTimeoutErr is the error of a command whose connection could not be
// made in time: the real client, the real net package, a real listener
// given no time to be reached. net's dial timeout also says it is
// context.DeadlineExceeded, though no caller's deadline passed.
func dialTimeoutErr(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Nanosecond})
	defer c.Close()
	return c.Get(context.Background(), "k").Err()
}

func TestClassifyEveryRedisErrorClass(t *testing.T) {
	tests := []struct {
		name string
		err  func(t *testing.T) error
		want class
	}{
		{"success", func(*testing.T) error { return nil }, classOK},
		{"missing key is an answer", func(t *testing.T) error { return replyErr(t, "$-1") }, classOK},
		{"WRONGTYPE is about the command", func(t *testing.T) error {
			return replyErr(t, "-WRONGTYPE Operation against a key holding the wrong kind of value")
		}, classReply},
		{"unknown command", func(t *testing.T) error { return replyErr(t, "-ERR unknown command 'FOO'") }, classReply},
		{"NOSCRIPT is about the command", func(t *testing.T) error { return replyErr(t, "-NOSCRIPT No matching script.") }, classReply},
		{"OOM refuses the write only", func(t *testing.T) error {
			return replyErr(t, "-OOM command not allowed when used memory > 'maxmemory'.")
		}, classReply},
		{"MISCONF (cannot persist) refuses writes only", func(t *testing.T) error {
			return replyErr(t, "-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.")
		}, classReply},
		{"BUSY: a script runs there, nothing else does", func(t *testing.T) error {
			return replyErr(t, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
		}, classRefused},
		{"BUSYKEY is about the command", func(t *testing.T) error {
			return replyErr(t, "-BUSYKEY Target key name already exists.")
		}, classReply},
		{"MOVED", func(t *testing.T) error { return replyErr(t, "-MOVED 3999 127.0.0.1:6381") }, classMoved},
		{"ASK", func(t *testing.T) error { return replyErr(t, "-ASK 3999 127.0.0.1:6381") }, classAsk},
		{"TRYAGAIN", func(t *testing.T) error {
			return replyErr(t, "-TRYAGAIN Multiple keys request during rehashing of slot")
		}, classTryAgain},
		{"CLUSTERDOWN", func(t *testing.T) error { return replyErr(t, "-CLUSTERDOWN The cluster is down") }, classClusterDn},
		{"NOREPLICAS (min-replicas-to-write not met)", func(t *testing.T) error {
			return replyErr(t, "-NOREPLICAS Not enough good replicas to write. script: 12f27dc052d1e7d097aa4e6e9ef162245e21fe77, on @user_script:3.")
		}, classClusterDn},
		{"a script's write while the cluster is down", func(t *testing.T) error {
			return replyErr(t, "-ERR Script attempted to execute a write command while the cluster is down and readonly script: 23b97b594c8ddbf39d069027e0210d5734dcf69a, on @user_script:9.")
		}, classClusterDn},
		{"MASTERDOWN", func(t *testing.T) error {
			return replyErr(t, "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
		}, classClusterDn},
		{"READONLY", func(t *testing.T) error {
			return replyErr(t, "-READONLY You can't write against a read only replica.")
		}, classNotServed},
		{"LOADING", func(t *testing.T) error {
			return replyErr(t, "-LOADING Redis is loading the dataset in memory")
		}, classNotServed},
		{"NOAUTH on a command", func(t *testing.T) error { return replyErr(t, "-NOAUTH Authentication required.") }, classRefused},
		{"NOPERM on a command", func(t *testing.T) error {
			return replyErr(t, "-NOPERM User apollo has no permissions to run the 'get' command")
		}, classRefused},
		{"max clients", func(t *testing.T) error { return replyErr(t, "-ERR max number of clients reached") }, classRefused},
		{"max clients in cluster mode", func(t *testing.T) error {
			return replyErr(t, "-ERR max number of clients + cluster connections reached")
		}, classRefused},
		{"set-up: wrong password", func(t *testing.T) error {
			return handshakeErr(t, "secret", "-WRONGPASS invalid username-password pair or user is disabled.")
		}, classRefused},
		{"set-up: password required", func(t *testing.T) error {
			return handshakeErr(t, "", "-NOAUTH HELLO must be called with the client already authenticated")
		}, classRefused},
		{"set-up: AUTH to a node without a password", func(t *testing.T) error {
			return handshakeErr(t, "secret", "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		}, classRefused},
		{"connection refused", closedPortErr, classUnsent},
		{"dial error", func(*testing.T) error { return &net.OpError{Op: "dial", Err: errors.New("no route to host")} }, classUnsent},
		{"dial timeout: nothing was sent", dialTimeoutErr, classUnsent},
		{"pool timeout", func(*testing.T) error { return errors.New("redis: connection pool timeout") }, classUnsent},
		{"connection closed before the reply", closeOnGet, classUnanswered},
		{"read timeout", func(*testing.T) error {
			return &net.OpError{Op: "read", Err: timeoutErr{}}
		}, classUnanswered},
		{"caller canceled", func(*testing.T) error { return fmt.Errorf("x: %w", context.Canceled) }, classCanceled},
		{"caller deadline", func(*testing.T) error { return context.DeadlineExceeded }, classCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err(t)
			if got := classify(err); got != tt.want {
				t.Errorf("classify(%v) = %d, want %d", err, got, tt.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

// closeOnGet is the error of a GET whose connection the node closes
// instead of answering: the request was sent, no reply came.
func closeOnGet(t *testing.T) error {
	t.Helper()
	addr, wait := serveOnce(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		c.Read(buf) // the command
		c.Close()
	})
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	err := c.Get(context.Background(), "k").Err()
	wait()
	return err
}

// A reply that is the node's state (every client that reaches it meets
// it) counts as an answer for readiness; a refusal of this client, or a
// reply about the command, does not. Wrapped as the router returns it.
func TestNodeStateRepliesAreTheNodesNotTheClients(t *testing.T) {
	for reply, want := range map[string]bool{
		"-CLUSTERDOWN The cluster is down":                                                                  true,
		"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.":                 true,
		"-LOADING Redis is loading the dataset in memory":                                                   true,
		"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.":           true,
		"-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.": true,
		"-OOM command not allowed when used memory > 'maxmemory'.":                                          true,
		"-WRONGPASS invalid username-password pair or user is disabled.":                                    false,
		"-NOAUTH Authentication required.":                                                                  false,
		"-NOPERM this user has no permissions to run the 'exists' command":                                  false,
		"-ERR max number of clients reached":                                                                false,
		"-BUSYKEY Target key name already exists.":                                                          false,
		"-MOVED 3999 127.0.0.1:6381":                                                                        false,
		"-ERR unknown command 'FOO'":                                                                        false,
	} {
		err := fmt.Errorf("%w: %w", ErrUnavailable, replyErr(t, reply))
		if got := isNodeState(err); got != want {
			t.Errorf("isNodeState(%q) = %v, want %v", reply, got, want)
		}
	}
}
