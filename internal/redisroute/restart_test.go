package redisroute

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseRunID(t *testing.T) {
	tests := []struct{ name, info, want string }{
		{"Redis 7", "# Server\r\nredis_version:7.0.15\r\nrun_id:8f3c0b7e1d\r\ntcp_port:6379\r\n", "8f3c0b7e1d"},
		{"without CR", "# Server\nrun_id:abc\n", "abc"},
		{"absent", "# Server\r\nredis_version:7.0.15\r\n", ""},
		{"another field's value", "# Server\r\nexecutable:/run_id:x\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRunID(tt.info); got != tt.want {
				t.Errorf("parseRunID = %q, want %q", got, tt.want)
			}
		})
	}
}

// A new connection that finds another process behind a replica's address
// holds the replica out of reads until a check judges it, and a new
// connection is refused while the replica is held out of reads, for this
// or any reason, so that a read routed to it before goes elsewhere. A
// primary is held, but never refused; nor is the first process seen.
func TestANewConnectionTellsARestart(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
	r, p, a := c.r, c.nodes["p:1"], c.nodes["a:1"]
	caughtUp := verdict{known: true, reason: replicaCaughtUp}
	r.judged(a, caughtUp, r.clock.Now())

	steps := []struct {
		name       string
		n          *node
		runID      string
		wantErr    error
		wantBehind bool
	}{
		{"the first process seen", a, "run-1", nil, false},
		{"the same process, another connection", a, "run-1", nil, false},
		{"INFO without run_id, or refused", a, "", nil, false},
		{"a restart", a, "run-2", errHeldOut, true},
		{"another connection while held", a, "run-2", errHeldOut, true},
		{"judged behind since", a, "run-2", errHeldOut, true},
		{"INFO refused while held", a, "", errHeldOut, true},
		{"a primary's first process", p, "run-p1", nil, false},
		{"a primary's restart: held, not refused", p, "run-p2", nil, true},
	}
	for _, st := range steps {
		if strings.HasPrefix(st.name, "judged behind") {
			r.judged(a, verdict{known: true, behind: true, reason: behindLinkDown}, r.clock.Now())
		}
		if err := r.connected(st.n, st.runID); !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: connected = %v, want %v", st.name, err, st.wantErr)
		}
		if got := st.n.behind.Load(); got != st.wantBehind {
			t.Fatalf("%s: behind %v, want %v", st.name, got, st.wantBehind)
		}
	}
	if got := classify(errHeldOut); got != classNotServed {
		t.Errorf("a refused connection is classified %v, want not served (%v): the read goes to another node", got, classNotServed)
	}
	r.judged(a, caughtUp, r.clock.Now())
	if err := r.connected(a, "run-2"); err != nil || a.behind.Load() {
		t.Errorf("judged since its restart: connected = %v, behind %v; want it served", err, a.behind.Load())
	}
}

// The replication checks learn the run id as well (sawRunID), so that
// the first request connection to a replica that restarted before any
// read reached it tells the restart. A check's answer older than the run
// id recorded since (asked before a connection set itself up, recorded
// after) is passed over: it would read as a restart back.
func TestACheckLearnsTheRunIDAndAnOlderAnswerIsPassedOver(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
	r, a := c.r, c.nodes["a:1"]
	caughtUp := verdict{known: true, reason: replicaCaughtUp}
	before := r.clock.Now()
	r.judged(a, caughtUp, before)
	r.sawRunID(a, "run-1", before)
	c.clock.Advance(time.Millisecond)
	if err := r.connected(a, "run-2"); !errors.Is(err, errHeldOut) || !a.behind.Load() {
		t.Fatalf("first connection after a restart the check saw the process before: connected = %v, behind %v; want refused and held", err, a.behind.Load())
	}
	c.clock.Advance(time.Millisecond)
	r.judged(a, caughtUp, r.clock.Now())
	r.sawRunID(a, "run-1", before)
	if a.runID != "run-2" || a.behind.Load() {
		t.Errorf("an answer from before the connection's: run id %q, behind %v; want run-2 kept and not held", a.runID, a.behind.Load())
	}
	if err := r.connected(a, "run-2"); err != nil {
		t.Errorf("the same process since: connected = %v, want served", err)
	}
}

// The set-up of a new connection: READONLY and INFO server in one round
// trip. A node whose ACL user may not run INFO is served all the same
// (its restarts go unseen), one that refuses READONLY is not.
func TestTheConnectionSetUpAsksForTheRunID(t *testing.T) {
	tests := []struct {
		name      string
		readOnly  string
		info      string
		wantRunID string // what connected is told; "-" for not called
		wantErr   bool
	}{
		{"a Redis", "+OK", bulkOrError("# Server\r\nrun_id:r1\r\n"), "r1", false},
		{"INFO not allowed", "+OK", "-NOPERM User apollo has no permissions to run the 'info' command", "", false},
		{"READONLY refused", "-NOPERM no READONLY", bulkOrError("# Server\r\nrun_id:r1\r\n"), "-", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeRESP(t, func(cmd []string) string {
				switch strings.ToUpper(cmd[0]) {
				case "HELLO":
					return "-ERR unknown command 'HELLO'" // as Redis 5 does: go-redis goes on with RESP2
				case "READONLY":
					return tt.readOnly
				case "INFO":
					return tt.info
				}
				return "+PONG"
			})
			got := "-"
			n := &node{addr: f.addr()}
			cl := redis.NewClient(&redis.Options{Addr: f.addr(), Protocol: 2, MaxRetries: -1, DisableIdentity: true,
				DialTimeout: time.Second, OnConnect: n.onConnect(func(_ *node, id string) error { got = id; return nil })})
			defer cl.Close()
			err := cl.Ping(context.Background()).Err()
			if (err != nil) != tt.wantErr || got != tt.wantRunID {
				t.Errorf("PING: %v, run id %q; want error %v, run id %q", err, got, tt.wantErr, tt.wantRunID)
			}
		})
	}
}

// A write that a MOVED sends to a replica promoted before the router's
// refresh goes to that node however it is held out of reads: the redirect
// names it the slot's owner, whose data is the slot's. Refused, the write
// backed off and was moved there again, up to maxRedirects, and failed if
// the refresh had not come by then. A replica held since the redirect
// (a restart seen after it) is refused as before.
func TestAWriteMovedToAHeldReplicaIsServedThere(t *testing.T) {
	var c *fakeCluster
	primary := func(int, []redis.Cmder) error { return nil }
	runID := "run-1"
	// a:1 behind a new connection every time, as after a restart.
	newConn := func(call int, cmds []redis.Cmder) error {
		if err := c.r.connected(c.nodes["a:1"], runID); err != nil {
			return err
		}
		return answer("a:1", 2)(call, cmds)
	}
	c = newFakeCluster(t, shard3(func(call int, cmds []redis.Cmder) error { return primary(call, cmds) }, newConn, answer("b:1", 2)))
	key := c.key(0)
	primary = failAll(redis.Error(movedTo{Slot(key), "a:1"}))
	a := c.nodes["a:1"]
	c.r.judged(a, verdict{known: true, behind: true, reason: behindLinkDown}, c.clock.Now())
	c.clock.Advance(time.Millisecond)

	r := c.advanceUntil(t, c.exec(longCtx(t), Write("SET", key, "v")), 10*time.Millisecond)[0]
	if r.Err != nil || r.Node != "a:1" {
		t.Fatalf("write moved to a held replica: %+v, want it served by a:1", r)
	}
	c.clock.Advance(time.Millisecond)
	runID = "run-2" // restarted since the redirect
	if err := c.r.connected(a, runID); !errors.Is(err, errHeldOut) {
		t.Errorf("a restart after the redirect: connected = %v, want errHeldOut", err)
	}
}
