package redisroute

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// primaryInfo is INFO replication of a primary at offset of history
// replid, listing each replica as "addr=offset".
func primaryInfo(replid string, offset int64, listed ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n", len(listed))
	for i, l := range listed {
		addr, off, _ := strings.Cut(l, "=")
		host, port, _ := strings.Cut(addr, ":")
		fmt.Fprintf(&b, "slave%d:ip=%s,port=%s,state=online,offset=%s,lag=0\r\n", i, host, port, off)
	}
	fmt.Fprintf(&b, "master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:%d\r\n", replid, offset)
	return b.String()
}

// linkDown is a replica's INFO replication with its link down.
func linkDown(info string) string {
	return strings.Replace(info, "link_status:up", "link_status:down", 1)
}

// promotedInfo is INFO replication of a replica promoted from history
// replid2, which it holds up to second (one past its last byte, as Redis
// gives second_repl_offset), and now at offset of its own history replid.
func promotedInfo(replid string, offset int64, replid2 string, second int64) string {
	return fmt.Sprintf("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\nmaster_repl_offset:%d\r\nsecond_repl_offset:%d\r\n", replid, replid2, offset, second)
}

// replicaInfo is INFO replication of a replica of master, at offset of
// history replid.
func replicaInfo(master, replid string, offset int64) string {
	host, port, _ := strings.Cut(master, ":")
	return fmt.Sprintf("# Replication\r\nrole:slave\r\nmaster_host:%s\r\nmaster_port:%s\r\nmaster_link_status:up\r\nslave_repl_offset:%d\r\nmaster_replid:%s\r\nmaster_repl_offset:%d\r\n", host, port, offset, replid, offset)
}

func TestParseReplicationReadsTheHistoryAndEachReplicasOffset(t *testing.T) {
	p := parseReplication(primaryInfo("h1", 1200, "127.0.0.1:7001=1150", "127.0.0.1:7002=1200"))
	if !p.primary || p.replid != "h1" || p.offset != 1200 || len(p.replicas) != 2 || p.replicas[0].offset != 1150 || p.replicas[1].offset != 1200 {
		t.Fatalf("primary = %+v", p)
	}
	r := parseReplication(replicaInfo("127.0.0.1:7000", "h1", 990))
	if r.primary || r.replid != "h1" || r.offset != 990 || r.master != "127.0.0.1:7000" {
		t.Fatalf("replica = %+v", r)
	}
}

// Each way a replica can answer, against its primary's INFO taken right
// after a write (history h1, offset 1000).
func TestReplicaVerdict(t *testing.T) {
	primary := parseReplication(primaryInfo("h1", 1000))
	for _, tc := range []struct {
		name string
		own  string
		want string
		at   string // the primary's address; p:1 if empty
	}{
		{name: "at the write's offset", own: replicaInfo("p:1", "h1", 1000), want: replicaHolds},
		{name: "past it", own: replicaInfo("p:1", "h1", 1300), want: replicaHolds},
		{name: "before it: the write may be on its way", own: replicaInfo("p:1", "h1", 999), want: replicaBehind},
		{name: "syncing afresh from this primary (old history until loaded)", own: replicaInfo("p:1", "h0", 5000), want: replicaBehind},
		{name: "promoted (forced over): the old primary's writes are not its", own: primaryInfo("h2", 1000), want: replicaPromoted},
		{name: "promoted, even at the same history and offset", own: primaryInfo("h1", 1000), want: replicaPromoted},
		{name: "promoted from this history, holding the write", own: promotedInfo("h2", 1200, "h1", 1001), want: replicaHolds},
		{name: "promoted from this history, one byte short", own: promotedInfo("h2", 1200, "h1", 1000), want: replicaPromoted},
		{name: "its link down, though at the offset", own: linkDown(replicaInfo("p:1", "h1", 1000)), want: replicaLinkDown},
		{name: "its link down and behind", own: linkDown(replicaInfo("p:1", "h1", 900)), want: replicaLinkDown},
		{name: "copying another primary's history (past a failover)", own: replicaInfo("a:1", "h2", 5000), want: replicaElsewhere},
		{name: "copying another primary on another loopback address", own: replicaInfo("127.0.0.2:1", "h2", 5000), want: replicaElsewhere, at: "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := cmp.Or(tc.at, "p:1")
			if got := replicaVerdict(parseReplication(tc.own), primary, at); got != tc.want {
				t.Errorf("verdict = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExactEndpointTakesNoAliases(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:7000", "127.0.0.1:7000", true},
		{"::ffff:10.0.0.1:7000", "10.0.0.1:7000", false}, // not host:port: unparsable
		{"[::ffff:10.0.0.1]:7000", "10.0.0.1:7000", true},
		{"127.0.0.2:7000", "127.0.0.1:7000", false}, // sameEndpoint's one loopback host
		{"10.0.0.1:7000", "10.0.0.1:7001", false},
		{"Redis-A:6379", "redis-a:6379", true},
		{"redis-a:6379", "10.0.0.1:6379", false},
	} {
		if got := exactEndpoint(tc.a, tc.b); got != tc.want {
			t.Errorf("exactEndpoint(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// scripted answers a pipeline like a healthy node, except INFO
// replication: a pipeline with a WAIT (the primary's) gets primary in
// the first INFO and after in the second; a lone INFO (a replica asked)
// gets the next of replica, the last one repeating. A reply starting
// with "-" is an error.
func scripted(addr string, acks int64, primary, after string, replica ...string) func(int, []redis.Cmder) error {
	var mu sync.Mutex // proofs ask a replica at once
	asked := 0
	return func(call int, cmds []redis.Cmder) error {
		mu.Lock()
		defer mu.Unlock()
		err := answer(addr, acks)(call, cmds)
		infos := 0
		for _, c := range cmds {
			s, ok := c.(*redis.StringCmd)
			if !ok || c.Name() != "info" {
				continue
			}
			var text string
			switch {
			case len(cmds) == 1:
				text = replica[min(asked, len(replica)-1)]
				asked++
			case infos == 0:
				text = primary
			default:
				text = after
			}
			infos++
			if e, ok := strings.CutPrefix(text, "-"); ok {
				s.SetErr(redis.Error(replyError(e)))
				continue
			}
			s.SetVal(text)
		}
		return err
	}
}

// A write whose WAIT met its count is done only once every replica of its
// shard is shown to hold it, or to be unable to take over without it: the
// shapes of a forced failover, each scripted. The primary's first INFO is
// at offset 100 (history h1); b:1 is listed past it unless said otherwise.
func TestAWriteIsDoneOnlyOnceEveryReplicaHoldsItOrCannotTakeOver(t *testing.T) {
	listsB := primaryInfo("h1", 130, "b:1=120")
	for _, tc := range []struct {
		name       string
		primary    func(int, []redis.Cmder) error
		a, b       func(int, []redis.Cmder) error
		aBehind    bool // the replication check holds a:1 behind
		wantErr    error
		wantAskedA int // how many times a:1 was asked; -1: at least twice
		wantAskedB int
	}{
		{
			name:    "the primary lists both replicas at the write's offset: nothing more is asked",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "a:1=100", "b:1=120")),
			a:       answer("a:1", 0), b: answer("b:1", 0),
		},
		{
			name:    "one replica acknowledged, the other is asked and holds it",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "a:1=90", "b:1=120")),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 100)), b: answer("b:1", 0),
			wantAskedA: 1,
		},
		{
			name:    "the other was forced over: it answers as a primary",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", primaryInfo("h2", 95)), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: 1,
		},
		{
			name:    "the other copies another primary, and goes on doing so: unconfirmed",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("b:1", "h2", 400)), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: -1,
		},
		{
			name:    "the other is switching to this primary (a coordinated failover): asked again",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("b:1", "h0", 90), replicaInfo("p:1", "h1", 100)), b: answer("b:1", 0),
			wantAskedA: 2,
		},
		{
			name:    "the other is behind for a while, then holds it",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a: scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 10), replicaInfo("p:1", "h1", 40), replicaInfo("p:1", "h1", 60),
				replicaInfo("p:1", "h1", 99), replicaInfo("p:1", "h1", 100)),
			b:          answer("b:1", 0),
			wantAskedA: 5,
		},
		{
			name:    "the other is listed, but not online (syncing): it is asked",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), strings.Replace(primaryInfo("h1", 130, "a:1=100", "b:1=120"), "state=online", "state=wait_bgsave", 1)),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 100)), b: answer("b:1", 0),
			wantAskedA: 1,
		},
		{
			name:    "an address listed twice proves nothing: each replica under it is asked",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "a:1=120", "a:1=120", "b:1=120")),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 100)), b: answer("b:1", 0),
			wantAskedA: 1,
		},
		{
			name:    "the other was promoted from this primary's history past the write (a coordinated failover): it holds it",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", promotedInfo("h2", 140, "h1", 121)), b: answer("b:1", 0),
			wantAskedA: 1,
		},
		{
			name:    "the other was promoted from this primary's history before the write",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", promotedInfo("h2", 140, "h1", 100)), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: 1,
		},
		{
			name:    "the other is behind, then has it: asked again",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 90), replicaInfo("p:1", "h1", 100)), b: answer("b:1", 0),
			wantAskedA: 2,
		},
		{
			name:    "the other is behind, then promoted",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 90), primaryInfo("h2", 95)), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: 2,
		},
		{
			name:    "the other, in step, stays behind for AckTimeout: unconfirmed",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 90)), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: -1,
		},
		{
			name:    "the other, in step, says its link is down: it receives nothing, so it is not waited for",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", linkDown(replicaInfo("p:1", "h1", 90))), b: answer("b:1", 0),
			wantAskedA: 1,
		},
		{
			name:    "the other says its link is down, but the primary listed it after the WAIT (the primary may have just died): waited for",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "a:1=90", "b:1=120")),
			a:       scripted("a:1", 0, "", "", linkDown(replicaInfo("p:1", "h1", 90))), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: -1,
		},
		{
			name:    "the other says its link is down, and the primary lists a replica under an address no node has (NAT): it may be the other, so it is waited for",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "10.9.9.9:1=90", "b:1=120")),
			a:       scripted("a:1", 0, "", "", linkDown(replicaInfo("p:1", "h1", 90))), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: -1,
		},
		{
			name:    "the other, held behind by the check, is behind: not waited for",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 90)), b: answer("b:1", 0),
			aBehind: true, wantAskedA: 1,
		},
		{
			name:    "the other, held behind by the check, copies another history (syncing): not waited for",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", replicaInfo("p-alias:1", "h0", 5000)), b: answer("b:1", 0),
			aBehind: true, wantAskedA: 1,
		},
		{
			name:    "the other, held behind by the check, answers as a primary",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", primaryInfo("h2", 95)), b: answer("b:1", 0),
			aBehind: true, wantErr: ErrUnconfirmed, wantAskedA: 1,
		},
		{
			name:    "the other refuses the connection: a failed node, it cannot take over now",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       failAll(errUnsentForTest), b: answer("b:1", 0),
			wantAskedA: 1,
		},
		{
			name:    "the other, in step, refuses the command (NOPERM): it cannot be told, so unconfirmed",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", "-NOPERM this user has no permissions to run the 'info' command"), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed, wantAskedA: 1,
		},
		{
			name:    "the other, held behind by the check, refuses the command: only an answer as a primary would count",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), listsB),
			a:       scripted("a:1", 0, "", "", "-NOPERM this user has no permissions to run the 'info' command"), b: answer("b:1", 0),
			aBehind: true, wantAskedA: 1,
		},
		{
			name:    "neither is listed: both are asked, and one of them was forced over",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130)),
			a:       scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 100)),
			b:       scripted("b:1", 0, "", "", primaryInfo("h2", 95)),
			wantErr: ErrUnconfirmed, wantAskedA: 1, wantAskedB: 1,
		},
		{
			name:       "neither is listed: both are asked, and both hold it",
			primary:    scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130)),
			a:          scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 100)),
			b:          scripted("b:1", 0, "", "", replicaInfo("p:1", "h1", 130)),
			wantAskedA: 1, wantAskedB: 1,
		},
		{
			name:    "the primary's INFO is refused",
			primary: scripted("p:1", 1, "-NOPERM this user has no permissions to run the 'info' command", primaryInfo("h1", 130)),
			a:       answer("a:1", 0), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed,
		},
		{
			name:    "the primary's history changed during the write",
			primary: scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h2", 130, "a:1=130", "b:1=130")),
			a:       answer("a:1", 0), b: answer("b:1", 0),
			wantErr: ErrUnconfirmed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newFakeNode("a:1", tc.a), newFakeNode("b:1", tc.b)
			c := newFakeCluster(t, [][]*fakeNode{{newFakeNode("p:1", tc.primary), a, b}})
			if tc.aBehind {
				c.r.setBehind(c.nodes["a:1"], verdict{known: true, behind: true, reason: behindLinkDown})
			}
			w := Write("SET", c.key(0), "v")
			w.Acks = 1
			r := c.advanceUntil(t, c.exec(longCtx(t), w), time.Millisecond)[0]
			if tc.wantErr == nil && r.Err != nil || tc.wantErr != nil && !errors.Is(r.Err, tc.wantErr) {
				t.Fatalf("got %+v, want error %v", r, tc.wantErr)
			}
			if got := a.callCount(); tc.wantAskedA >= 0 && got != tc.wantAskedA || tc.wantAskedA < 0 && got < 2 {
				t.Errorf("a:1 asked %d times, want %d", got, tc.wantAskedA)
			}
			if got := b.callCount(); got != tc.wantAskedB {
				t.Errorf("b:1 asked %d times, want %d", got, tc.wantAskedB)
			}
		})
	}
}

// Ejection is about serving reads: a replica ejected after a stall that
// answers its probes again can be forced over before it is re-admitted,
// so it is asked too. One whose probes fail is down, and not asked.
func TestAnEjectedReplicaIsAskedOnceItAnswersItsProbes(t *testing.T) {
	for _, answering := range []bool{false, true} {
		t.Run(fmt.Sprintf("answering its probes: %v", answering), func(t *testing.T) {
			a := newFakeNode("a:1", scripted("a:1", 0, "", "", primaryInfo("h2", 95)))
			c := newFakeCluster(t, [][]*fakeNode{{
				newFakeNode("p:1", scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "b:1=120"))), a, newFakeNode("b:1", answer("b:1", 0)),
			}})
			c.r.eject(c.nodes["a:1"], ejectStalled)
			if answering {
				c.r.probeResult(c.nodes["a:1"], true)
			}
			w := Write("SET", c.key(0), "v")
			w.Acks = 1
			r := c.r.Exec(longCtx(t), []Cmd{w})[0]
			if answering && !errors.Is(r.Err, ErrUnconfirmed) || !answering && r.Err != nil {
				t.Fatalf("got %+v; a:1, ejected and answering its probes: %v, answers as a primary", r, answering)
			}
		})
	}
}

// A proof that could not be read (the primary's INFO refused) fails the
// write, but says nothing of the primary's data: its reads are not made
// confirmed reads, as they are when a replica answers as a primary.
func TestOnlyAProofThatFoundAPromotionMarksThePrimary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		primary  string
		replica  string
		wantMark bool
	}{
		{"the primary's INFO refused", "-NOPERM no permissions", primaryInfo("h1", 100), false},
		{"a replica answers as a primary", primaryInfo("h1", 100), primaryInfo("h2", 95), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, [][]*fakeNode{{
				newFakeNode("p:1", scripted("p:1", 1, tc.primary, primaryInfo("h1", 130))),
				newFakeNode("a:1", scripted("a:1", 0, "", "", tc.replica)),
				newFakeNode("b:1", scripted("b:1", 0, "", "", replicaInfo("p:1", "h1", 130))),
			}})
			unconfirmedWrite(t, c)
			marked := c.clock.Now().UnixNano() < c.nodes["p:1"].unackedUntil.Load()
			if marked != tc.wantMark {
				t.Errorf("primary marked unacknowledged: %v, want %v", marked, tc.wantMark)
			}
		})
	}
}

// The proof's INFO replication goes right before the WAIT (its offset is
// at or past the writes') and right after it (each replica's acknowledged
// offset, after the WAIT made them answer), on the write's connection.
func TestAWritesProofSurroundsItsWait(t *testing.T) {
	var wire []string
	c := newFakeCluster(t, [][]*fakeNode{{
		newFakeNode("p:1", func(call int, cmds []redis.Cmder) error {
			for _, c := range cmds {
				wire = append(wire, fmt.Sprint(c.Args()...))
			}
			return answer("p:1", 2)(call, cmds)
		}),
		newFakeNode("a:1", answer("a:1", 0)), newFakeNode("b:1", answer("b:1", 0)),
	}})
	w := Write("SET", c.key(0), "v")
	w.Acks = 1
	if r := c.r.Exec(longCtx(t), []Cmd{w})[0]; r.Err != nil {
		t.Fatalf("got %+v, want the write done", r)
	}
	want := []string{"SET" + c.key(0) + "v", "inforeplication", "wait1 250", "inforeplication"}
	if strings.Join(wire, "|") != strings.Join(want, "|") {
		t.Fatalf("sent %q, want %q", wire, want)
	}
}

// A replica in step that stays behind a write for the ack timeout fails
// that write, and is not waited for by the next ones until the lag check
// would have seen it: a replica slower than the ack timeout, yet
// acknowledging each second, must not fail every write of its shard.
func TestAReplicaThatStayedBehindAWriteIsNotWaitedForByTheNext(t *testing.T) {
	a := newFakeNode("a:1", scripted("a:1", 0, "", "", replicaInfo("p:1", "h1", 90)))
	c := newFakeCluster(t, [][]*fakeNode{{
		newFakeNode("p:1", scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "b:1=120"))), a, newFakeNode("b:1", answer("b:1", 0)),
	}})
	w := Write("SET", c.key(0), "v")
	w.Acks = 1
	if r := c.advanceUntil(t, c.exec(longCtx(t), w), time.Millisecond)[0]; !errors.Is(r.Err, ErrUnconfirmed) {
		t.Fatalf("first write: %+v, want ErrUnconfirmed (a:1 stayed behind it)", r)
	}
	asked := a.callCount()
	if r := c.advanceUntil(t, c.exec(longCtx(t), w), time.Millisecond)[0]; r.Err != nil {
		t.Fatalf("second write: %+v, want it done (a:1 is not waited for now)", r)
	}
	if got := a.callCount() - asked; got != 1 {
		t.Errorf("a:1 asked %d times by the second write, want once (an answer as a primary still counts)", got)
	}
	if got := testutil.ToFloat64(c.r.m.proofOutOfStep); got != 1 {
		t.Errorf("out_of_step verdicts = %v, want 1", got)
	}
	// Once the lag check would have seen it, it is waited for again.
	c.clock.Advance(c.r.unackedHold())
	if r := c.advanceUntil(t, c.exec(longCtx(t), w), time.Millisecond)[0]; !errors.Is(r.Err, ErrUnconfirmed) {
		t.Fatalf("write after the hold: %+v, want ErrUnconfirmed (a:1 is waited for again, and still behind)", r)
	}
}

// A replica in step that cannot be asked, though it is there (it refuses
// INFO, or no connection to it was free in time), fails the write, and is
// then held as a laggard, not ejected for a refusal that is not its
// silence: the next write does not wait for it.
func TestAReplicaThatCannotBeAskedFailsOneWriteAndIsHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a       func(int, []redis.Cmder) error
		ejected bool
	}{
		{"no connection free in time", failAll(fmt.Errorf("redis: %w", redis.ErrPoolTimeout)), false},
		{"INFO refused (NOPERM)", scripted("a:1", 0, "", "", "-NOPERM this user has no permissions to run the 'info' command"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newFakeNode("a:1", tc.a)
			c := newFakeCluster(t, [][]*fakeNode{{
				newFakeNode("p:1", scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "b:1=120"))), a, newFakeNode("b:1", answer("b:1", 0)),
			}})
			w := unconfirmedWrite(t, c)
			if c.ejected("a:1") != tc.ejected {
				t.Errorf("a:1 ejected: %v, want %v", c.ejected("a:1"), tc.ejected)
			}
			if tc.ejected {
				c.r.probeResult(c.nodes["a:1"], true) // it answers PING: asked again
			}
			if r := c.r.Exec(longCtx(t), []Cmd{w})[0]; r.Err != nil {
				t.Fatalf("second write: %+v, want it done (a:1 is held as a laggard)", r)
			}
		})
	}
}

// A replica that answers nothing while its primary did is ejected after
// StallAfter, and the write goes on: one replica of two failing must not
// stop writes (redisstore's TestCreatesGoOnWhenOneOfTwoReplicasFails).
func TestAWriteGoesOnPastAReplicaThatHangsOnceItIsEjected(t *testing.T) {
	a := newFakeNode("a:1", answer("a:1", 0))
	a.hang()
	c := newFakeCluster(t, [][]*fakeNode{{
		newFakeNode("p:1", scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "b:1=120"))), a, newFakeNode("b:1", answer("b:1", 0)),
	}}, func(cfg *Config) { cfg.StallAfter = 20 * time.Millisecond })
	w := Write("SET", c.key(0), "v")
	w.Acks = 1
	r := c.r.Exec(longCtx(t), []Cmd{w})[0]
	if r.Err != nil {
		t.Fatalf("got %+v, want the write done", r)
	}
	if !c.ejected("a:1") {
		t.Error("a:1 answered nothing for StallAfter and was not ejected")
	}
}

// A confirmed read is proven the same way: its fence is a write.
func TestAConfirmedReadOfAPrimaryWhoseReplicaWasForcedOverIsUnconfirmed(t *testing.T) {
	c := newFakeCluster(t, [][]*fakeNode{{
		newFakeNode("p:1", scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "b:1=120"))),
		newFakeNode("a:1", scripted("a:1", 0, "", "", primaryInfo("h2", 90))),
		newFakeNode("b:1", answer("b:1", 0)),
	}})
	key := c.key(0)
	r := c.r.Exec(longCtx(t), []Cmd{{Args: []any{"GET", key}, Key: key, Fresh: true, Acks: 1}})[0]
	if !errors.Is(r.Err, ErrReadUnconfirmed) || r.Val != nil {
		t.Fatalf("got %+v, want ErrReadUnconfirmed and no value", r)
	}
}

// errUnsentForTest is a dial failure: the connection was refused, so the
// request never left.
var errUnsentForTest = fmt.Errorf("dial tcp a:1: %w", syscall.ECONNREFUSED)

// unconfirmedWrite writes one key of c's first shard, acknowledged by one
// replica, and wants it unconfirmed, with no reply error of the proof's
// (the primary's or a replica's) in its chain: callers take a reply error
// in the chain for the command's own (a bug, a 500). It returns the write,
// to be sent again.
func unconfirmedWrite(t *testing.T, c *fakeCluster) Cmd {
	t.Helper()
	w := Write("SET", c.key(0), "v")
	w.Acks = 1
	r := c.r.Exec(longCtx(t), []Cmd{w})[0]
	if !errors.Is(r.Err, ErrUnconfirmed) {
		t.Fatalf("write: %+v, want ErrUnconfirmed", r)
	}
	var reply redis.Error
	if errors.As(r.Err, &reply) {
		t.Errorf("the write's error wraps a reply error of the proof's, %q", reply)
	}
	return w
}

// Writes whose proofs ask a replica at once, all refused (it runs a script
// that never ends: BUSY), fail one write between them, not one each: the
// first refusal holds the replica as a laggard, and a proof whose answer
// came after that hold reads it as the next write would (a refusal from a
// replica not waited for: down). Before, every write in flight when a
// replica went busy failed.
func TestConcurrentProofsRefusedByOneReplicaFailOneWrite(t *testing.T) {
	const writes = 8
	a := newFakeNode("a:1", scripted("a:1", 0, "", "", "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."))
	c := newFakeCluster(t, [][]*fakeNode{{
		newFakeNode("p:1", scripted("p:1", 1, primaryInfo("h1", 100), primaryInfo("h1", 130, "b:1=120"))), a, newFakeNode("b:1", answer("b:1", 0)),
	}})
	release := a.hang()
	w := Write("SET", c.key(0), "v")
	w.Acks = 1
	res := make([]<-chan Results, writes)
	for i := range res {
		res[i] = c.exec(longCtx(t), w)
	}
	for range writes {
		waitArrived(t, a) // every proof has asked a:1
	}
	release()
	failed := 0
	for _, ch := range res {
		r := (<-ch)[0]
		switch {
		case errors.Is(r.Err, ErrUnconfirmed):
			failed++
		case r.Err != nil:
			t.Errorf("write: %+v, want it done or ErrUnconfirmed", r)
		}
	}
	if failed != 1 {
		t.Errorf("%d of %d writes failed on one refusing replica, want 1", failed, writes)
	}
	if got := testutil.ToFloat64(c.r.m.proofUnconfirmed); got != 1 {
		t.Errorf("unconfirmed verdicts = %v, want 1", got)
	}
	if got := testutil.ToFloat64(c.r.m.proofDown); got != writes-1 {
		t.Errorf("down verdicts = %v, want %d (the refusals after the hold)", got, writes-1)
	}
}
