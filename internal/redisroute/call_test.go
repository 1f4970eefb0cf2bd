package redisroute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The call state machine, pinned with scripted nodes and a test clock:
// what each kind of node failure does to a read, a fresh read and a write.

var errWrongPass = redis.Error(wrongPass{})

type wrongPass struct{}

func (wrongPass) Error() string {
	return "WRONGPASS invalid username-password pair or user is disabled."
}
func (wrongPass) RedisError() {}

// shard3 is a 3 × 2 cluster whose first shard's nodes (p:1, a:1, b:1)
// behave as given; the other shards are healthy.
func shard3(primary, a, b func(int, []redis.Cmder) error) [][]*fakeNode {
	shards := [][]*fakeNode{{newFakeNode("p:1", primary), newFakeNode("a:1", a), newFakeNode("b:1", b)}}
	for _, s := range []string{"2", "3"} {
		shards = append(shards, []*fakeNode{newFakeNode("p:"+s, answer("p:"+s, 2)), newFakeNode("a:"+s, answer("a:"+s, 2)), newFakeNode("b:"+s, answer("b:"+s, 2))})
	}
	return shards
}

func longCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAReplicaRefusingItsHandshakeIsAFailedNode(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), failSetUp(errWrongPass), answer("b:1", 2)))
	res := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})
	if res[0].Err != nil || res[0].Val != "GET@b:1" || res[0].Via != ViaRetry {
		t.Fatalf("got %+v, want the other replica's answer, by retry", res[0])
	}
	if !c.ejected("a:1") || c.counter("ejections", "a:1", ejectAuth) != 1 || c.counter("node_errors", "a:1", "auth") != 1 {
		t.Errorf("a:1 ejected=%v ejections=%v errors=%v, want ejected once for auth", c.ejected("a:1"),
			c.counter("ejections", "a:1", ejectAuth), c.counter("node_errors", "a:1", "auth"))
	}
	if got := c.counter("commands", "ok"); got != 1 {
		t.Errorf("commands ok = %v, want 1 (the refused attempt is not a success)", got)
	}
	// The ejected node gets no more requests.
	for i := 0; i < 10; i++ {
		if r := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})[0]; r.Err != nil || r.Node == "a:1" {
			t.Fatalf("after ejection: %+v", r)
		}
	}
	if n := c.nodes["a:1"].pipe.(*fakeNode).callCount(); n != 1 {
		t.Errorf("a:1 got %d requests, want 1", n)
	}
}

func TestBothReplicasRefusingFallsBackToThePrimary(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), failSetUp(errWrongPass), failSetUp(errWrongPass)))
	if r := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})[0]; r.Err != nil || r.Node != "p:1" {
		t.Fatalf("got %+v, want the primary's answer", r)
	}
	if !c.ejected("a:1") || !c.ejected("b:1") || c.ejected("p:1") {
		t.Errorf("ejected a=%v b=%v p=%v, want both replicas and not the primary", c.ejected("a:1"), c.ejected("b:1"), c.ejected("p:1"))
	}
	if r := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})[0]; r.Err != nil || r.Node != "p:1" || r.Via != ViaFallback || r.Attempts != 1 {
		t.Errorf("next call: %+v, want one attempt, a fallback to the primary", r)
	}
}

func TestAWriteToAPrimaryRefusingItsHandshakeIsNeverDone(t *testing.T) {
	c := newFakeCluster(t, shard3(failSetUp(errWrongPass), answer("a:1", 2), answer("b:1", 2)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // real time: the fake clock reaches it first, as the retries back off
	defer cancel()
	r := c.advanceUntil(t, c.exec(ctx, Write("SET", c.key(0), "v")), 50*time.Millisecond)[0]
	if r.Err == nil || errors.Is(r.Err, ErrAmbiguous) || !strings.Contains(r.Err.Error(), "WRONGPASS") {
		t.Fatalf("got %+v, want a failure that names WRONGPASS and is not ambiguous (nothing ran)", r)
	}
	for _, a := range []string{"a:1", "b:1"} {
		if n := c.nodes[a].pipe.(*fakeNode).callCount(); n != 0 {
			t.Errorf("a write went to replica %s %d times", a, n)
		}
	}
}

func TestAHungReplicaIsHedgedAround(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	release := shards[0][1].hang()
	c := newFakeCluster(t, shards)
	res := c.exec(longCtx(t), Read("GET", c.key(0)))
	waitArrived(t, shards[0][1])
	c.waitTimers(t, 1)
	c.clock.Advance(c.r.cfg.HedgeMin)
	r := (<-res)[0]
	if r.Err != nil || r.Node != "b:1" || r.Via != ViaHedge {
		t.Fatalf("got %+v, want the hedge to b:1", r)
	}
	if c.counter("hedges", "sent") != 1 || c.counter("hedges", "won") != 1 {
		t.Errorf("hedges sent=%v won=%v, want 1 and 1", c.counter("hedges", "sent"), c.counter("hedges", "won"))
	}
	release()
}

func TestAFreshReadIsNeverAnsweredByAReplica(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	release := shards[0][0].hang()
	c := newFakeCluster(t, shards)
	res := c.exec(longCtx(t), Cmd{Args: []any{"GET", c.key(0)}, Key: c.key(0), Fresh: true})
	waitArrived(t, shards[0][0])
	// Far past every hedge delay and the stall threshold: still no replica.
	for i := 0; i < 20; i++ {
		c.clock.Advance(10 * time.Millisecond)
	}
	select {
	case r := <-res:
		t.Fatalf("the call ended while its primary was silent: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	r := (<-res)[0]
	if r.Err != nil || r.Node != "p:1" {
		t.Fatalf("got %+v, want the primary's answer", r)
	}
	for _, f := range shards[0][1:] {
		if n := f.callCount(); n != 0 {
			t.Errorf("fresh read sent to replica %s %d times", f.addr, n)
		}
	}
}

func TestAFreshReadWhosePrimaryIsDownFailsRatherThanAskAReplica(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	c := newFakeCluster(t, shard3(failAll(refused), answer("a:1", 2), answer("b:1", 2)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // real time: the fake clock reaches it first, as the retries back off
	defer cancel()
	r := c.advanceUntil(t, c.exec(ctx, Cmd{Args: []any{"GET", c.key(0)}, Key: c.key(0), Fresh: true}), 50*time.Millisecond)[0]
	if r.Err == nil {
		t.Fatalf("got %+v, want a failure", r)
	}
	for _, a := range []string{"a:1", "b:1"} {
		if n := c.nodes[a].pipe.(*fakeNode).callCount(); n != 0 {
			t.Errorf("fresh read sent to replica %s %d times", a, n)
		}
	}
}

func TestAWriteWhoseReplyIsLostIsAmbiguousAndNotReplayed(t *testing.T) {
	c := newFakeCluster(t, shard3(failAll(io.ErrUnexpectedEOF), answer("a:1", 2), answer("b:1", 2)))
	r := c.r.Exec(longCtx(t), []Cmd{Write("SET", c.key(0), "v")})[0]
	if !errors.Is(r.Err, ErrAmbiguous) {
		t.Fatalf("got %+v, want ErrAmbiguous", r)
	}
	if n := c.nodes["p:1"].pipe.(*fakeNode).callCount(); n != 1 {
		t.Errorf("the write was sent %d times, want once", n)
	}
}

func TestAWriteThatWasNotSentIsSentAgain(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	ok := answer("p:1", 2)
	c := newFakeCluster(t, shard3(func(call int, cmds []redis.Cmder) error {
		if call == 1 {
			return failAll(refused)(call, cmds)
		}
		return ok(call, cmds)
	}, answer("a:1", 2), answer("b:1", 2)))
	r := c.advanceUntil(t, c.exec(longCtx(t), Write("SET", c.key(0), "v")), 10*time.Millisecond)[0]
	if r.Err != nil || r.Attempts != 2 {
		t.Fatalf("got %+v, want success on the second attempt", r)
	}
}

func TestAWriteWithTooFewAcksIsUnconfirmed(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 0), answer("a:1", 2), answer("b:1", 2)))
	w := Write("SET", c.key(0), "v")
	w.Acks = 1
	r := c.r.Exec(longCtx(t), []Cmd{w})[0]
	if !errors.Is(r.Err, ErrUnconfirmed) || errors.Is(r.Err, ErrAmbiguous) {
		t.Fatalf("got %+v, want ErrUnconfirmed", r)
	}
}

func TestAnUnansweredReadIsRetriedOnAnotherNode(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), failAll(io.EOF), answer("b:1", 2)))
	r := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})[0]
	if r.Err != nil || r.Node != "b:1" || r.Via != ViaRetry || r.Attempts != 2 {
		t.Fatalf("got %+v, want b:1's answer by retry", r)
	}
	if c.counter("retries", "sent") != 1 {
		t.Errorf("retries sent = %v, want 1", c.counter("retries", "sent"))
	}
}

func TestACommandsOwnErrorFailsOnlyThatCommand(t *testing.T) {
	wrongType := redis.Error(replyError("WRONGTYPE Operation against a key holding the wrong kind of value"))
	c := newFakeCluster(t, shard3(answer("p:1", 2), func(_ int, cmds []redis.Cmder) error {
		cmds[0].SetErr(wrongType)
		cmds[1].(*redis.Cmd).SetVal("ok")
		return wrongType
	}, answer("b:1", 2)))
	res := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0)), Read("GET", c.key(0))})
	if !errors.Is(res[0].Err, wrongType) || res[1].Err != nil || res[1].Val != "ok" {
		t.Fatalf("got %+v, want WRONGTYPE on the first command only", res)
	}
	if c.ejected("a:1") {
		t.Error("a node was ejected for a command's own error")
	}
}

type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// A fresh read whose primary answers nothing fails once the primary is
// hopeless, instead of waiting out its deadline (and never asks a replica).
func TestAFreshReadFailsFastWhenItsPrimaryIsSilent(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	shards[0][0].hang()
	c := newFakeCluster(t, shards)
	res := c.exec(longCtx(t), Cmd{Args: []any{"GET", c.key(0)}, Key: c.key(0), Fresh: true})
	waitArrived(t, shards[0][0])
	c.waitTimers(t, 1)
	c.clock.Advance(c.r.cfg.FailFastAfter)
	r := (<-res)[0]
	if !errors.Is(r.Err, ErrUnavailable) {
		t.Fatalf("got %+v, want ErrUnavailable once the primary is hopeless", r)
	}
	for _, f := range shards[0][1:] {
		if n := f.callCount(); n != 0 {
			t.Errorf("fresh read sent to replica %s %d times", f.addr, n)
		}
	}
}

// A primary that answers nothing may have been replaced by a failover
// the router has not heard of: the calls it fails fast, a fresh read in
// flight and a write not sent, each ask for a new slot map, so that the
// router finds the new primary at once, not at its next periodic refresh
// (up to RefreshInterval of writes failed for nothing).
func TestCallsFailedForASilentPrimaryAskForANewSlotMap(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	shards[0][0].hang()
	c := newFakeCluster(t, shards)
	requested := func() string {
		select {
		case reason := <-c.r.refreshCh:
			return reason
		default:
			return ""
		}
	}
	res := c.exec(longCtx(t), Cmd{Args: []any{"GET", c.key(0)}, Key: c.key(0), Fresh: true})
	waitArrived(t, shards[0][0])
	c.waitTimers(t, 1)
	requested() // whatever came before the primary counted as silent
	c.clock.Advance(c.r.cfg.FailFastAfter)
	if r := (<-res)[0]; !errors.Is(r.Err, ErrUnavailable) {
		t.Fatalf("fresh read: got %+v, want ErrUnavailable once the primary is hopeless", r)
	}
	if got := requested(); got != refreshPrimaryStalled {
		t.Errorf("after a fresh read failed on a silent primary: refresh requested %q, want %q", got, refreshPrimaryStalled)
	}
	if r := (<-c.exec(longCtx(t), Write("SET", c.key(0), "v")))[0]; !errors.Is(r.Err, errPrimaryStalled) {
		t.Fatalf("write: got %+v, want errPrimaryStalled", r)
	}
	if got := requested(); got != refreshPrimaryStalled {
		t.Errorf("after a write was not sent to a silent primary: refresh requested %q, want %q", got, refreshPrimaryStalled)
	}
}

// recordWire answers like answer and records each command's name and
// first argument, in the order they were sent.
func recordWire(addr string, acks int64, fenceErr error, wire *[]string) func(int, []redis.Cmder) error {
	ok := answer(addr, acks)
	return func(call int, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "info" {
				continue // a WAIT's proof: TestAWritesProofSurroundsItsWait
			}
			*wire = append(*wire, fmt.Sprint(c.Args()[0], " ", c.Args()[1]))
		}
		err := ok(call, cmds)
		for _, c := range cmds {
			if c.Name() == "set" && fenceErr != nil {
				c.SetErr(fenceErr)
			}
		}
		return err
	}
}

// A confirmed read (Fresh, with Acks): after the read, the router writes a
// fence key of the read's slot on the same node and WAITs for it, so a
// replica acknowledging the fence holds everything the read saw.
func TestAConfirmedReadIsFencedAndConfirmedByAReplica(t *testing.T) {
	var wire []string
	c := newFakeCluster(t, shard3(recordWire("p:1", 1, nil, &wire), answer("a:1", 2), answer("b:1", 2)))
	key := c.key(0)
	r := c.r.Exec(longCtx(t), []Cmd{{Args: []any{"GET", key}, Key: key, Fresh: true, Acks: 1}})[0]
	if r.Err != nil || r.Val != "GET@p:1" {
		t.Fatalf("got %+v, want the primary's answer", r)
	}
	if len(wire) != 3 || wire[0] != "GET "+key || !strings.HasPrefix(wire[1], "set apollo:fence:{") || !strings.HasPrefix(wire[2], "wait 1") {
		t.Fatalf("sent %q, want the read, a fence write, then WAIT 1", wire)
	}
	if fence := strings.TrimPrefix(wire[1], "set "); Slot(fence) != Slot(key) {
		t.Errorf("fence %s is in slot %d, the read's key in %d", fence, Slot(fence), Slot(key))
	}
}

func TestAConfirmedReadNoReplicaAcknowledgesIsUnconfirmed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		acks     int64
		fenceErr error
	}{
		{"no replica acknowledges (a primary cut off from its replicas)", 0, nil},
		{"the fence write fails, so WAIT covers nothing", 2, redis.Error(oom{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wire []string
			c := newFakeCluster(t, shard3(recordWire("p:1", tc.acks, tc.fenceErr, &wire), answer("a:1", 2), answer("b:1", 2)))
			r := c.r.Exec(longCtx(t), []Cmd{{Args: []any{"GET", c.key(0)}, Key: c.key(0), Fresh: true, Acks: 1}})[0]
			if !errors.Is(r.Err, ErrReadUnconfirmed) || errors.Is(r.Err, ErrUnconfirmed) || r.Val != nil {
				t.Fatalf("got %+v, want ErrReadUnconfirmed and no value", r)
			}
		})
	}
}

type oom struct{}

func (oom) Error() string { return "OOM command not allowed when used memory > 'maxmemory'." }
func (oom) RedisError()   {}

// A fence answered MOVED means the node answered a read of a slot it no
// longer serves (a primary demoted under us): the read follows the
// redirect, with its fence, instead of failing or standing.
func TestAConfirmedReadWhoseFenceIsMovedFollowsTheRedirect(t *testing.T) {
	var wire []string
	key := ""
	moved := func(call int, cmds []redis.Cmder) error { return nil }
	c := newFakeCluster(t, shard3(func(call int, cmds []redis.Cmder) error { return moved(call, cmds) }, answer("a:1", 2), answer("b:1", 2)))
	key = c.key(0)
	moved = recordWire("p:1", 2, redis.Error(movedTo{Slot(key), "a:1"}), &wire)
	r := c.r.Exec(longCtx(t), []Cmd{{Args: []any{"GET", key}, Key: key, Fresh: true, Acks: 1}})[0]
	if r.Err != nil || r.Node != "a:1" || r.Val != "GET@a:1" {
		t.Fatalf("got %+v, want the answer of the node the fence was moved to", r)
	}
}

type movedTo struct {
	slot int
	addr string
}

func (m movedTo) Error() string { return fmt.Sprintf("MOVED %d %s", m.slot, m.addr) }
func (movedTo) RedisError()     {}

// A plain read falls back to the primary when the shard's replicas have
// fallen behind it. If they fell behind because the primary is cut off
// from them (the minority side of a partition), its answer may hold writes
// the failover undoes: such a fallback is confirmed like a Fresh read with
// Acks 1, and fails if no replica holds what it saw. Replicas that are
// down (ejected), not behind, leave the fallback as it was: one dead
// replica must cost no read.
func TestAReadFallingBackToAPrimaryWhoseReplicasAreBehindIsConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		acks     int64
		behind   bool
		wantErr  error
		wantWire int // commands on the primary's wire
	}{
		{"replicas behind, one holds what the read saw", 1, true, nil, 3},
		{"replicas behind, none holds it (the primary is cut off)", 0, true, ErrReadUnconfirmed, 3},
		{"replicas ejected, not behind: a plain fallback", 0, false, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wire []string
			refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			replica := answer("r", 2)
			if !tc.behind {
				replica = failAll(refused)
			}
			c := newFakeCluster(t, shard3(recordWire("p:1", tc.acks, nil, &wire), replica, replica))
			for _, a := range []string{"a:1", "b:1"} {
				if tc.behind {
					c.r.setBehind(c.nodes[a], verdict{known: true, behind: true, reason: behindLinkDown})
				} else {
					c.nodes[a].ejected.Store(true)
				}
			}
			r := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})[0]
			if !errors.Is(r.Err, tc.wantErr) || tc.wantErr == nil && (r.Err != nil || r.Node != "p:1") {
				t.Fatalf("got %+v, want error %v from the primary", r, tc.wantErr)
			}
			if len(wire) != tc.wantWire {
				t.Errorf("sent %q to the primary, want %d commands", wire, tc.wantWire)
			}
		})
	}
}

// A read whose every node is silent fails once they count as hopeless,
// even when that is later than usual because the router itself was not
// running for a while (GC, a starved CPU: the stall floor moved, so
// silence proved nothing then). Found by TestFullOutageFailsFastAndRecovers
// under -race, whose calls sometimes waited out their deadline: a slow
// attempt was looked at twice only.
func TestAReadOfASilentShardFailsFastOnceTheRouterCanTell(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	for _, f := range shards[0] {
		f.hang()
	}
	c := newFakeCluster(t, shards)
	res := c.exec(longCtx(t), Read("GET", c.key(0)))
	waitArrived(t, shards[0][1])
	// The router is paused now and then for 3 × FailFastAfter: no node
	// is blamed meanwhile.
	start := c.clock.Now()
	paused := 3 * c.r.cfg.FailFastAfter
	var r Result
	for r.Err == nil {
		select {
		case out := <-res:
			r = out[0]
		case <-time.After(time.Millisecond):
			if c.clock.Now().Sub(start) > 20*c.r.cfg.FailFastAfter {
				t.Fatalf("the call still waits %s after its nodes fell silent", c.clock.Now().Sub(start))
			}
			if c.clock.Now().Sub(start) < paused {
				c.r.stallFloor.Store(c.clock.Now().UnixNano())
			}
			c.clock.Advance(10 * time.Millisecond)
		}
	}
	if !errors.Is(r.Err, ErrUnavailable) {
		t.Fatalf("got %+v, want ErrUnavailable once the shard's nodes count as hopeless", r)
	}
	if took := c.clock.Now().Sub(start); took < paused {
		t.Errorf("failed %s after the nodes fell silent, while the router could not tell yet (%s)", took, paused)
	}
}

// A read whose hedge was refused at once (the replica reset it) while its
// first node hangs goes on to the node not tried yet: the refused node
// holds nothing, so it is not waited for.
func TestAReadWhoseHedgeWasRefusedGoesOnOnceItsNodeIsHopeless(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	shards := shard3(answer("p:1", 2), answer("a:1", 2), failAll(refused))
	shards[0][1].hang()
	c := newFakeCluster(t, shards)
	r := c.advanceUntil(t, c.exec(longCtx(t), Read("GET", c.key(0))), 10*time.Millisecond)[0]
	if r.Err != nil || r.Node != "p:1" {
		t.Fatalf("got %+v, want the primary's answer once a:1 is hopeless", r)
	}
}

// A read whose nodes fell silent while the hedge budget is spent fails
// once they count as hopeless, rather than waiting out its deadline for
// a token (found by review: the budget runs dry in just such outages).
func TestAReadOfASilentShardFailsFastWithTheHedgeBudgetSpent(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	for _, f := range shards[0] {
		f.hang()
	}
	c := newFakeCluster(t, shards, func(cfg *Config) { cfg.BudgetBurst = 0 })
	start := c.clock.Now()
	r := c.advanceUntil(t, c.exec(longCtx(t), Read("GET", c.key(0))), 10*time.Millisecond)[0]
	if !errors.Is(r.Err, ErrUnavailable) || c.counter("hedges", "sent") != 0 {
		t.Fatalf("got %+v with %v hedges sent, want ErrUnavailable and none", r, c.counter("hedges", "sent"))
	}
	if took := c.clock.Now().Sub(start); took > 3*c.r.cfg.FailFastAfter {
		t.Errorf("failed after %s, want soon after %s (the node counts as hopeless)", took, c.r.cfg.FailFastAfter)
	}
}

// A write to a primary that no replica acknowledged, while a replica the
// replication check vouches for answers, is the first sign of a primary
// cut off from its replicas: reads sent to it are confirmed from then on
// (here every read goes to primaries, as while slots migrate), for as long
// as the lag check would take to see the cut. Without a live replica, or
// once the mark has run out, they are plain again.
func TestAReadOfAPrimaryThatJustLeftAWriteUnacknowledgedIsConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unacked  bool
		vouched  bool
		after    bool // the mark has run out
		wantWire int  // commands on the primary's wire
	}{
		{"unacknowledged write, live replicas: confirmed", true, true, false, 3},
		{"no unacknowledged write: plain", false, true, false, 1},
		{"unacknowledged write, nothing answers for the replicas: plain", true, false, false, 1},
		{"unacknowledged write long ago: plain", true, true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wire []string
			c := newFakeCluster(t, shard3(recordWire("p:1", 1, nil, &wire), answer("a:1", 2), answer("b:1", 2)))
			if tc.unacked {
				c.r.markUnacked(c.nodes["p:1"])
			}
			if tc.after {
				c.clock.Advance(c.r.unackedHold())
			}
			for _, a := range []string{"a:1", "b:1"} {
				if tc.vouched {
					c.nodes[a].repl.Store(&verdict{known: true, reason: replicaCaughtUp, at: c.clock.Now()})
				}
			}
			c.r.migratingUntil.Store(c.clock.Now().Add(time.Hour).UnixNano())
			r := c.r.Exec(longCtx(t), []Cmd{Read("GET", c.key(0))})[0]
			if r.Err != nil || r.Node != "p:1" {
				t.Fatalf("got %+v, want an answer from the primary", r)
			}
			if len(wire) != tc.wantWire {
				t.Errorf("sent %q to the primary, want %d commands", wire, tc.wantWire)
			}
		})
	}
}

// A read redirected (MOVED or ASK, as during a reshard) to a primary that
// just left a write unacknowledged is confirmed there like any other read
// sent to it: the node a slot moves to may be the one cut off.
func TestARedirectedReadToASuspectPrimaryIsConfirmed(t *testing.T) {
	var wire []string
	key := ""
	primary := func(call int, cmds []redis.Cmder) error { return nil }
	shards := shard3(func(call int, cmds []redis.Cmder) error { return primary(call, cmds) }, answer("a:1", 2), answer("b:1", 2))
	shards[1][0] = newFakeNode("p:2", recordWire("p:2", 1, nil, &wire))
	c := newFakeCluster(t, shards)
	key = c.key(0)
	primary = failAll(redis.Error(movedTo{Slot(key), "p:2"}))
	c.r.markUnacked(c.nodes["p:2"])
	for _, a := range []string{"a:2", "b:2"} {
		c.nodes[a].repl.Store(&verdict{known: true, reason: replicaCaughtUp, at: c.clock.Now()})
	}
	c.r.migratingUntil.Store(c.clock.Now().Add(time.Hour).UnixNano())
	r := c.r.Exec(longCtx(t), []Cmd{Read("GET", key)})[0]
	if r.Err != nil || r.Node != "p:2" {
		t.Fatalf("got %+v, want the answer of the node the read was moved to", r)
	}
	if len(wire) != 3 {
		t.Errorf("sent %q to the primary the read was moved to, want the read, its fence and WAIT", wire)
	}
}

// A confirmed read whose fence WAIT falls short marks its primary as a
// write would: the fence is a write the replicas did not take, so reads
// sent to that node afterwards are confirmed too.
func TestAConfirmedReadShortOfAcksMarksItsPrimary(t *testing.T) {
	var wire []string
	c := newFakeCluster(t, shard3(recordWire("p:1", 0, nil, &wire), answer("a:1", 2), answer("b:1", 2)))
	for _, a := range []string{"a:1", "b:1"} {
		c.nodes[a].repl.Store(&verdict{known: true, reason: replicaCaughtUp, at: c.clock.Now()})
	}
	key := c.key(0)
	if r := c.r.Exec(longCtx(t), []Cmd{{Args: []any{"GET", key}, Key: key, Fresh: true, Acks: 1}})[0]; !errors.Is(r.Err, ErrReadUnconfirmed) {
		t.Fatalf("confirmed read with no replica acknowledging: %+v, want ErrReadUnconfirmed", r)
	}
	wire = nil
	c.r.migratingUntil.Store(c.clock.Now().Add(time.Hour).UnixNano()) // plain reads go to primaries
	c.r.Exec(longCtx(t), []Cmd{Read("GET", key)})
	if len(wire) != 3 || !strings.HasPrefix(wire[1], "set apollo:fence:{") {
		t.Errorf("sent %q to the primary for a plain read after it, want the read, its fence and WAIT", wire)
	}
}

// A hedge sent to a primary whose reads must be confirmed, that cannot
// confirm, is a failed attempt, not the command's answer, while the
// attempt it hedged may still answer: a slow replica beats an error.
func TestAnUnconfirmedHedgeWaitsForTheAttemptItHedged(t *testing.T) {
	shards := shard3(answer("p:1", 0), answer("a:1", 2), answer("b:1", 2))
	release := shards[0][1].hang()
	c := newFakeCluster(t, shards)
	c.r.eject(c.nodes["b:1"], "test") // the hedge can only go to the primary
	c.nodes["a:1"].repl.Store(&verdict{known: true, reason: replicaCaughtUp, at: c.clock.Now()})
	c.r.markUnacked(c.nodes["p:1"])
	res := c.exec(longCtx(t), Read("GET", c.key(0)))
	waitArrived(t, shards[0][1])
	c.waitTimers(t, 1)
	c.clock.Advance(c.r.cfg.HedgeMin)
	waitArrived(t, shards[0][0]) // the hedge, which p:1 answers unconfirmed
	select {
	case r := <-res:
		t.Fatalf("the call ended on its unconfirmed hedge while a:1 could still answer: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if r := (<-res)[0]; r.Err != nil || r.Node != "a:1" {
		t.Errorf("got %+v, want a:1's answer", r)
	}
}

// A command that runs out of time while the cluster answers that it is
// in no state to serve it (down, loading, mid-migration, moving the slot
// on and on) fails as unavailable, the reply naming why: the cluster's
// state, not a reply to the command. A reply to the command itself (a
// wrong type, a script's error) stays what it is.
func TestACommandOutOfTimeInAClusterStateIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		reply           replyError
		wantUnavailable bool
	}{
		{"CLUSTERDOWN The cluster is down", true},
		{"LOADING Redis is loading the dataset in memory", true},
		{"TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false},
	} {
		t.Run(strings.Fields(string(tc.reply))[0], func(t *testing.T) {
			c := newFakeCluster(t, shard3(failAll(tc.reply), answer("a:1", 2), answer("b:1", 2)))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // real time: the fake clock reaches it first, as the retries back off
			defer cancel()
			r := c.advanceUntil(t, c.exec(ctx, Write("SET", c.key(0), "v")), 50*time.Millisecond)[0]
			if errors.Is(r.Err, ErrUnavailable) != tc.wantUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), string(tc.reply)) {
				t.Errorf("got %+v; want an error naming %q, unavailable: %v", r, tc.reply, tc.wantUnavailable)
			}
		})
	}
}
