package redisroute

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// fakeClock is a clock the test moves: timers fire only when Advance
// passes them.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock         *fakeClock // its mu guards stopped and done
	at            time.Time
	f             func()
	stopped, done bool
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped && !t.done
	t.stopped = true
	return was
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// pending counts timers not yet fired or stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped && !t.done {
			n++
		}
	}
	return n
}

// Advance moves time on by d and fires the timers it passes, each on its
// own goroutine, as time.AfterFunc does.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.stopped && !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// fakeNode is a scripted node: each sub-pipeline it gets is answered by
// respond, after gate (if set) is closed.
type fakeNode struct {
	addr    string
	respond func(call int, cmds []redis.Cmder) error
	gate    chan struct{}

	mu      sync.Mutex
	calls   int
	release func()        // ends a hang
	arrived chan struct{} // one token per sub-pipeline received
}

func newFakeNode(addr string, respond func(call int, cmds []redis.Cmder) error) *fakeNode {
	return &fakeNode{addr: addr, respond: respond, arrived: make(chan struct{}, 64)}
}

func (f *fakeNode) Exec(ctx context.Context, cmds []redis.Cmder) error {
	f.mu.Lock()
	f.calls++
	call := f.calls
	gate := f.gate
	f.mu.Unlock()
	f.arrived <- struct{}{}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			// As go-redis with ContextTimeoutEnabled: the caller's
			// deadline is the socket's, and a read past it fails with a
			// net timeout, not the context's error.
			err := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
	}
	return f.respond(call, cmds)
}

func (f *fakeNode) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// hang makes the node hold every request until the returned release is
// called (the fake cluster's cleanup calls it too, before it waits for
// the senders).
func (f *fakeNode) hang() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = make(chan struct{})
	g := f.gate
	var once sync.Once
	f.release = func() { once.Do(func() { close(g) }) }
	return f.release
}

func (f *fakeNode) unhang() {
	f.mu.Lock()
	release := f.release
	f.mu.Unlock()
	if release != nil {
		release()
	}
}

// answer replies to every command with "<value>@<addr>" and to WAIT with
// acks, the way a healthy node does. INFO replication, in a pipeline with
// a WAIT (a write's proof, proof.go), says it is a primary at offset 0 of
// history "fake" that lists no replica, and alone (a replica asked) that
// it is a replica of that history at that offset: it holds the write.
func answer(addr string, acks int64) func(int, []redis.Cmder) error {
	return func(_ int, cmds []redis.Cmder) error {
		primary := false
		for _, c := range cmds {
			primary = primary || c.Name() == "wait"
		}
		for _, c := range cmds {
			switch c := c.(type) {
			case *redis.Cmd:
				c.SetVal(fmt.Sprint(c.Args()[0], "@", addr))
			case *redis.IntCmd:
				c.SetVal(acks)
			case *redis.StatusCmd:
				c.SetVal("OK")
			case *redis.StringCmd:
				if primary {
					c.SetVal("role:master\r\nmaster_replid:fake\r\nmaster_repl_offset:0\r\n")
				} else {
					c.SetVal("role:slave\r\nmaster_replid:fake\r\nmaster_repl_offset:0\r\n")
				}
			}
		}
		return nil
	}
}

// failSetUp is a node whose connection set-up fails with err, reported as
// go-redis v9.23 reports a Redis error from AUTH/HELLO: returned by Exec,
// and on none of the commands.
func failSetUp(err error) func(int, []redis.Cmder) error {
	return func(int, []redis.Cmder) error { return err }
}

// failAll sets err on every command, as go-redis does for a connection
// error.
func failAll(err error) func(int, []redis.Cmder) error {
	return func(_ int, cmds []redis.Cmder) error {
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
}

// fakeCluster is a router over fake nodes, shard by shard, primary first.
type fakeCluster struct {
	r     *Router
	clock *fakeClock
	reg   *prometheus.Registry
	nodes map[string]*node
}

func newFakeCluster(t *testing.T, shards [][]*fakeNode, edit ...func(*Config)) *fakeCluster {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addrs = []string{shards[0][0].addr}
	cfg.PrimaryFallbackRate = 0
	for _, e := range edit {
		e(&cfg)
	}
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	r := &Router{cfg: cfg, log: slog.New(slog.DiscardHandler), m: m, clock: clk, steady: newSteady(time.Now), refreshCh: make(chan string, 1), idle: make(chan func()),
		nodes: map[string]*node{}, hedges: newBudget(cfg.HedgeBudget, cfg.BudgetBurst), retries: newBudget(cfg.RetryBudget, cfg.BudgetBurst),
		stop: make(chan struct{})}
	top := &topology{}
	for _, fs := range shards {
		s := &shard{}
		for k, f := range fs {
			n := &node{addr: f.addr, pipe: f, askPipe: f, reads: coalescer{after: cfg.CoalesceAfter}, m: m.forNode(f.addr)}
			n.ewmaNanos.Store(int64(time.Millisecond))
			n.listedAt.Store(clk.Now().UnixNano()) // as the CLUSTER SLOTS answer this topology stands for
			r.nodes[f.addr] = n
			top.nodes = append(top.nodes, n)
			if k == 0 {
				s.primary = n
			} else {
				s.replicas = append(s.replicas, n)
			}
		}
		s.rr.Store(uint32(len(s.replicas) - 1)) // the first read goes to the first replica
		top.shards = append(top.shards, s)
	}
	for i := range top.slots {
		top.slots[i] = top.shards[i*len(top.shards)/numSlots]
	}
	r.topo.Store(top)
	t.Cleanup(func() {
		for _, fs := range shards {
			for _, f := range fs {
				f.unhang()
			}
		}
		close(r.stop) // idle senders end with the router
		r.wg.Wait()
	})
	return &fakeCluster{r: r, clock: clk, reg: reg, nodes: r.nodes}
}

// key returns a key of shard i.
func (c *fakeCluster) key(i int) string {
	t := c.r.topo.Load()
	return keyOnShard(t, t.shards[i], probePrefix)
}

// exec runs cmds on its own goroutine; the result arrives on the channel.
func (c *fakeCluster) exec(ctx context.Context, cmds ...Cmd) <-chan Results {
	out := make(chan Results, 1)
	go func() { out <- c.r.Exec(ctx, cmds) }()
	return out
}

// advanceUntil moves the clock on by step until the call ends.
func (c *fakeCluster) advanceUntil(t *testing.T, res <-chan Results, step time.Duration) Results {
	t.Helper()
	for i := 0; i < 10000; i++ {
		select {
		case r := <-res:
			return r
		case <-time.After(time.Millisecond):
			c.clock.Advance(step)
		}
	}
	t.Fatal("the call did not end")
	return nil
}

// waitTimers waits until the call has set at least n timers.
func (c *fakeCluster) waitTimers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.clock.pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("want %d pending timers, have %d", n, c.clock.pending())
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *fakeCluster) ejected(addr string) bool { return !c.nodes[addr].healthy() }

func (c *fakeCluster) counter(name string, labels ...string) float64 {
	var v *prometheus.CounterVec
	switch name {
	case "ejections":
		v = c.r.m.ejections
	case "node_errors":
		v = c.r.m.nodeErrors
	case "hedges":
		v = c.r.m.hedges
	case "retries":
		v = c.r.m.retries
	case "commands":
		v = c.r.m.commands
	}
	return testutil.ToFloat64(v.WithLabelValues(labels...))
}

func waitArrived(t *testing.T, f *fakeNode) {
	t.Helper()
	select {
	case <-f.arrived:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s got no request", f.addr)
	}
}
