package redisroute

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reads merged into one pipeline end exactly as each would have alone:
// the same reply or error on every command, the same error returned.

// reads are an attempt's plain reads: HMGET of each key.
func reads(keys ...string) []redis.Cmder {
	out := make([]redis.Cmder, len(keys))
	for i, k := range keys {
		out[i] = redis.NewCmd(context.Background(), "hmget", k, "lat")
	}
	return out
}

// replyPerKey answers each HMGET with its key, and a key "bad" with a
// reply error, returning the first error as go-redis does.
func replyPerKey(_ int, cmds []redis.Cmder) error {
	for _, c := range cmds {
		if k := fmt.Sprint(c.Args()[1]); k == "bad" {
			c.SetErr(replyError("ERR bad"))
		} else {
			c.(*redis.Cmd).SetVal(k)
		}
	}
	return firstErr(cmds)
}

// brokenAfter answers the first n commands of a pipeline, then the
// connection breaks. go-redis v9.23 (MaxRetries -1) then sets the error on
// every command without one, those answered included
// (generalProcessPipelineFrom → setCmdsErr), and returns it.
func brokenAfter(n int) func(int, []redis.Cmder) error {
	return func(_ int, cmds []redis.Cmder) error {
		for i, c := range cmds {
			if i < n {
				c.(*redis.Cmd).SetVal(fmt.Sprint(c.Args()[1]))
			}
		}
		if n >= len(cmds) {
			return nil
		}
		for _, c := range cmds {
			c.SetErr(io.ErrUnexpectedEOF)
		}
		return io.ErrUnexpectedEOF
	}
}

type outcome struct {
	vals []string // per command: its value, or "err:" and its error
	err  string   // what exec returned
}

func outcomeOf(wire []redis.Cmder, err error) outcome {
	var o outcome
	for _, c := range wire {
		if c.Err() != nil {
			o.vals = append(o.vals, "err:"+c.Err().Error())
		} else {
			o.vals = append(o.vals, fmt.Sprint(c.(*redis.Cmd).Val()))
		}
	}
	if err != nil {
		o.err = err.Error()
	}
	return o
}

// mergeBehindABusyPipeline sends first alone, holds it on the node until
// the others have queued behind it, then lets everything go: the others
// go out as one merged pipeline.
func mergeBehindABusyPipeline(t *testing.T, respond func(int, []redis.Cmder) error, first []redis.Cmder, others ...[]redis.Cmder) (*fakeNode, []outcome) {
	t.Helper()
	f := newFakeNode("n:1", respond)
	release := f.hang()
	q := &coalescer{after: 1}
	ctx := context.Background()
	out := make([]outcome, 1+len(others))
	done := make(chan int, 1+len(others))
	go func() { err := q.exec(ctx, f, first); out[0] = outcomeOf(first, err); done <- 0 }()
	waitArrived(t, f)
	for i, w := range others {
		go func() { err := q.exec(ctx, f, w); out[i+1] = outcomeOf(w, err); done <- i + 1 }()
		waitQueued(t, q, i+1) // one at a time: the merged pipeline is in this order
	}
	release()
	for range 1 + len(others) {
		<-done
	}
	if q.inFlight != 0 || len(q.queued) != 0 {
		t.Errorf("after the last pipeline: %d in flight, %d queued; want none", q.inFlight, len(q.queued))
	}
	return f, out
}

// waitQueued waits until n reads are queued on q.
func waitQueued(t *testing.T, q *coalescer, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		got := len(q.queued)
		q.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reads queued, want %d", got, n)
		}
	}
}

func TestMergedReadsEndAsEachAloneWould(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(int, []redis.Cmder) error
	}{
		{"answered", replyPerKey},
		{"a reply error on one command", replyPerKey},
		{"a handshake refused", failSetUp(errWrongPass)},
		{"a connection error on every command", failAll(io.ErrUnexpectedEOF)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := [][]string{{"k0"}, {"a1", "a2"}, {"b1", "bad", "b3"}, {"c1"}}
			if tc.name == "answered" {
				keys[2][1] = "b2"
			}
			var want []outcome
			for _, ks := range keys {
				w := reads(ks...)
				err := tc.respond(1, w)
				stampPipelineErr(err, w)
				want = append(want, outcomeOf(w, firstErr(w)))
			}
			var wires [][]redis.Cmder
			for _, ks := range keys {
				wires = append(wires, reads(ks...))
			}
			f, got := mergeBehindABusyPipeline(t, tc.respond, wires[0], wires[1:]...)
			if n := f.callCount(); n != 2 {
				t.Errorf("%d pipelines sent, want 2 (the first alone, the rest merged)", n)
			}
			for i := range keys {
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Errorf("attempt %d (%v): merged %+v, alone %+v", i, keys[i], got[i], want[i])
				}
			}
		})
	}
}

// A connection that breaks in the middle of a merged pipeline fails every
// read merged into it, those answered before the break too, as go-redis
// fails every command of a broken pipeline: the shared fate merging costs
// (each is retried or hedged as an unanswered read; none is answered
// wrongly).
func TestAMergedPipelineThatBreaksFailsEveryReadMergedIntoIt(t *testing.T) {
	a, b, c := reads("a1", "a2"), reads("b1", "b2"), reads("c1")
	// The merged pipeline is a1 a2 b1 b2 c1: it breaks after b1.
	respond := func(call int, cmds []redis.Cmder) error {
		if call == 1 {
			return replyPerKey(call, cmds)
		}
		return brokenAfter(3)(call, cmds)
	}
	_, got := mergeBehindABusyPipeline(t, respond, reads("k0"), a, b, c)
	eof := "err:" + io.ErrUnexpectedEOF.Error()
	want := []outcome{
		{vals: []string{"k0"}},
		{vals: []string{eof, eof}, err: io.ErrUnexpectedEOF.Error()},
		{vals: []string{eof, eof}, err: io.ErrUnexpectedEOF.Error()},
		{vals: []string{eof}, err: io.ErrUnexpectedEOF.Error()},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// With coalescing off, or below its threshold, nothing waits for anything.
func TestReadsBelowTheThresholdGoOutAtOnce(t *testing.T) {
	for _, after := range []int{0, 3} {
		f := newFakeNode("n:1", replyPerKey)
		release := f.hang()
		q := &coalescer{after: after}
		done := make(chan error, 3)
		for i := range 3 {
			go func() { done <- q.exec(context.Background(), f, reads(fmt.Sprint("k", i))) }()
		}
		for range 3 {
			waitArrived(t, f) // all three reached the node, none queued
		}
		release()
		for range 3 {
			if err := <-done; err != nil {
				t.Errorf("after=%d: %v", after, err)
			}
		}
	}
}

// A read queued behind a hung node's pipeline is hedged like any slow
// read: the call is answered by the other replica at the hedge delay.
func TestAReadQueuedBehindAHungNodeIsHedged(t *testing.T) {
	shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
	release := shards[0][1].hang()
	c := newFakeCluster(t, shards, func(cfg *Config) { cfg.CoalesceAfter = 1 })
	s := c.r.topo.Load().shards[0]
	first := c.exec(longCtx(t), Read("GET", c.key(0)))
	waitArrived(t, shards[0][1])
	s.rr.Store(uint32(len(s.replicas) - 1)) // the second read to a:1 too
	second := c.exec(longCtx(t), Read("GET", c.key(0)))
	a := c.nodes["a:1"]
	waitQueued(t, &a.reads, 1) // behind the first
	for _, res := range []<-chan Results{first, second} {
		r := c.advanceUntil(t, res, c.r.cfg.HedgeMin)[0]
		if r.Err != nil || r.Node != "b:1" || r.Via != ViaHedge {
			t.Errorf("got %+v, want the hedge to b:1", r)
		}
	}
	if n := a.inflight.Load(); n != 2 {
		t.Errorf("a:1 has %d requests in flight, want 2 (the one sent and the one queued: both count for its health)", n)
	}
	release()
	for deadline := time.Now().Add(5 * time.Second); a.inflight.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a:1 still has %d requests in flight after it answered", a.inflight.Load())
		}
	}
	if n := shards[0][1].callCount(); n != 2 {
		t.Errorf("a:1 got %d pipelines, want 2 (the queued read sent once the first returned)", n)
	}
}

// Only plain reads queue behind a busy pipeline: a write (with or without
// acknowledgements), a confirmed read (its fence and WAIT must stay on the
// connection of the read they confirm) and any read of the 2019 client's
// policy (sent with its caller's context) go to the node at once.
func TestOnlyPlainReadsQueueBehindABusyPipeline(t *testing.T) {
	acked := func(c Cmd) Cmd { c.Acks = 1; return c }
	fresh := func(c Cmd) Cmd { c.Fresh = true; return c }
	cases := []struct {
		name   string
		policy Policy
		target string // the node both calls go to
		cmd    func(key string) Cmd
		queues bool
	}{
		{"a plain read queues", Primary, "p:1", func(k string) Cmd { return Read("GET", k) }, true},
		{"a write", Primary, "p:1", func(k string) Cmd { return Write("SET", k, "v") }, false},
		{"a write with acknowledgements", Primary, "p:1", func(k string) Cmd { return acked(Write("SET", k, "v")) }, false},
		{"a confirmed read", Primary, "p:1", func(k string) Cmd { return acked(fresh(Read("GET", k))) }, false},
		{"a read of the 2019 policy", Legacy2019, "a:1", func(k string) Cmd { return Read("GET", k) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shards := shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2))
			shards[0] = shards[0][:2] // one replica: every replica read goes to a:1
			c := newFakeCluster(t, shards, func(cfg *Config) { cfg.CoalesceAfter, cfg.Policy = 1, tc.policy })
			f := map[string]*fakeNode{"p:1": shards[0][0], "a:1": shards[0][1]}[tc.target]
			release := f.hang()
			first := c.exec(longCtx(t), Read("GET", c.key(0)))
			waitArrived(t, f)
			second := c.exec(longCtx(t), tc.cmd(c.key(0)))
			q := &c.nodes[tc.target].reads
			if tc.queues {
				waitQueued(t, q, 1)
			} else {
				waitArrived(t, f) // sent on its own, while the first is in flight
				q.mu.Lock()
				if n := len(q.queued); n != 0 {
					t.Errorf("%d queued, want none", n)
				}
				q.mu.Unlock()
			}
			release()
			for _, res := range []<-chan Results{first, second} {
				select {
				case r := <-res:
					if r[0].Err != nil {
						t.Errorf("got %v", r[0].Err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no answer")
				}
			}
		})
	}
}

// Reads that become runnable together go out together: the first takes
// the free slot and yields before it sends, so the others queue behind it
// and join its pipeline, even on a node that answers at once (where,
// without the yield, each would find the slot free again and send alone).
// With one P, the order the scheduler runs them in is what the test pins;
// the scheduler may still pick the yielding read first (about one time in
// 61), so it is tried three times and one merge is enough.
func TestReadsRunnableTogetherGoOutInOnePipeline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const reads3 = 3
	for try := range 3 {
		f := newFakeNode("n:1", replyPerKey)
		q := &coalescer{after: 1}
		var wg sync.WaitGroup
		errs := make([]error, reads3)
		for i := range reads3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := reads(fmt.Sprint("k", i))
				errs[i] = q.exec(context.Background(), f, w)
				if got := fmt.Sprint(w[0].(*redis.Cmd).Val()); got != fmt.Sprint("k", i) {
					errs[i] = fmt.Errorf("read k%d answered %q", i, got)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if q.inFlight != 0 || len(q.queued) != 0 {
			t.Fatalf("after the reads: %d in flight, %d queued; want none", q.inFlight, len(q.queued))
		}
		n := f.callCount()
		t.Logf("try %d: %d pipelines for %d reads", try, n, reads3)
		if n < reads3 {
			return
		}
	}
	t.Errorf("%d reads runnable together went out in %d pipelines, three times; want them merged", reads3, reads3)
}
