package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memStore is the fleet store in memory, with a switch to make it fail:
// it pins the member's own rules (the Redis store has its own tests).
type memStore struct {
	mu      sync.Mutex
	now     func() time.Time
	members map[string]time.Time
	leases  map[int]lease
	fence   int
	down    bool
}

type lease struct {
	token string
	until time.Time
}

var errDown = errors.New("store down")

func newMemStore(now func() time.Time) *memStore {
	return &memStore{now: now, members: map[string]time.Time{}, leases: map[int]lease{}}
}

func (s *memStore) Heartbeat(_ context.Context, id string, _, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errDown
	}
	s.members[id] = until
	return nil
}

func (s *memStore) Members(_ context.Context, now time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errDown
	}
	var out []string
	for id, until := range s.members {
		if until.After(now) {
			out = append(out, id)
		}
	}
	return out, nil
}

func (s *memStore) Leave(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.members, id)
	return nil
}

func (s *memStore) Acquire(_ context.Context, p int, id string, ttl time.Duration) (Lease, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return Lease{}, false, errDown
	}
	if l, ok := s.leases[p]; ok && l.until.After(s.now()) {
		return Lease{}, false, nil
	}
	s.fence++
	tok := fmt.Sprintf("%s:%d", id, s.fence)
	s.leases[p] = lease{tok, s.now().Add(ttl)}
	return Lease{Partition: p, Token: tok}, true, nil
}

func (s *memStore) Renew(_ context.Context, ls []Lease, ttl time.Duration) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errDown
	}
	kept := make([]bool, len(ls))
	for i, l := range ls {
		cur, ok := s.leases[l.Partition]
		if ok && cur.token == l.Token && cur.until.After(s.now()) {
			s.leases[l.Partition] = lease{l.Token, s.now().Add(ttl)}
			kept[i] = true
		}
	}
	return kept, nil
}

func (s *memStore) Release(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases[l.Partition]; ok && cur.token == l.Token {
		delete(s.leases, l.Partition)
	}
	return nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func partitionsOf(ls []Lease) []int {
	var out []int
	for _, l := range ls {
		out = append(out, l.Partition)
	}
	return out
}

func newTestMember(t *testing.T, id string, s Store, clk *clock) *Member {
	t.Helper()
	cfg := Config{Partitions: 4, LeaseTTL: 5 * time.Second, RenewEvery: time.Second}
	m, err := NewMember(cfg, id, s, Clock{Local: clk.now, Shared: clk.now}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMembersSplitThePartitionsAndAStoppedOneHandsItsShareBack(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(clk.now)
	a, b := newTestMember(t, "a", s, clk), newTestMember(t, "b", s, clk)
	ctx := context.Background()
	a.Rebalance(ctx)
	if got := partitionsOf(a.Owned()); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("a alone owns %v, want every partition", got)
	}
	b.Rebalance(ctx) // b wants 1 and 3: a still holds them
	if got := partitionsOf(b.Owned()); len(got) != 0 {
		t.Fatalf("b took %v while a held them", got)
	}
	a.Rebalance(ctx) // a sees b and lets 1 and 3 go
	b.Rebalance(ctx)
	if ga, gb := partitionsOf(a.Owned()), partitionsOf(b.Owned()); !slices.Equal(ga, []int{0, 2}) || !slices.Equal(gb, []int{1, 3}) {
		t.Fatalf("a owns %v, b owns %v; want [0 2] and [1 3]", ga, gb)
	}
	b.Stop(ctx) // never started: Stop still hands back and leaves
	a.Rebalance(ctx)
	if got := partitionsOf(a.Owned()); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("after b stopped, a owns %v, want every partition at its next rebalance", got)
	}
}

func TestACrashedMembersShareIsTakenOverWhenItsLeasesRunOut(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(clk.now)
	a, b := newTestMember(t, "a", s, clk), newTestMember(t, "b", s, clk)
	ctx := context.Background()
	for range 2 {
		a.Rebalance(ctx)
		b.Rebalance(ctx)
	}
	// b crashes: nothing handed back, no more heartbeats.
	for elapsed := time.Second; elapsed <= 5*time.Second; elapsed += time.Second {
		clk.advance(time.Second)
		a.Rebalance(ctx)
		if got := partitionsOf(a.Owned()); elapsed < 5*time.Second && !slices.Equal(got, []int{0, 2}) {
			t.Fatalf("%s after b's crash a owns %v; b's leases still run", elapsed, got)
		}
	}
	if got := partitionsOf(a.Owned()); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("at the lease time after b's crash a owns %v, want every partition", got)
	}
}

func TestAMemberCutOffFromTheStoreStopsActingWhenItsLeasesWouldHaveRunOut(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(clk.now)
	a := newTestMember(t, "a", s, clk)
	ctx := context.Background()
	a.Rebalance(ctx)
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	clk.advance(4 * time.Second)
	a.Rebalance(ctx)
	if got := len(a.Owned()); got != 4 {
		t.Fatalf("4 s into an outage a owns %d partitions; its leases still run, want 4", got)
	}
	clk.advance(time.Second)
	if got := len(a.Owned()); got != 0 {
		t.Fatalf("at the lease time into an outage a still acts on %d partitions", got)
	}
}

func TestAMemberThatLostALeaseDropsIt(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(clk.now)
	a := newTestMember(t, "a", s, clk)
	ctx := context.Background()
	a.Rebalance(ctx)
	s.mu.Lock()
	s.leases[3] = lease{"x:99", clk.now().Add(time.Minute)} // taken from under it
	s.mu.Unlock()
	a.Rebalance(ctx)
	if got := partitionsOf(a.Owned()); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("a owns %v after losing 3", got)
	}
}

func TestStartAndStopOwnTheirGoroutine(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(clk.now)
	m, err := NewMember(Config{Partitions: 2, LeaseTTL: 20 * time.Millisecond, RenewEvery: 5 * time.Millisecond}, "a", s, Clock{Local: clk.now, Shared: clk.now}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	time.Sleep(20 * time.Millisecond)
	m.Stop(context.Background())
	if got, _ := s.Members(context.Background(), clk.now()); len(got) != 0 || len(s.leases) != 0 {
		t.Fatalf("after Stop: members %v, leases %v", got, s.leases)
	}
}

// The heartbeats are stamped and read in the shared clock, the leases
// measured in the local one: two members whose host clocks are 10 minutes
// apart still see each other and split the partitions.
func TestMembersWhoseHostClocksDisagreeStillSplitThePartitions(t *testing.T) {
	shared := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(shared.now)
	ahead := func() time.Time { return shared.now().Add(10 * time.Minute) }
	cfg := Config{Partitions: 4, LeaseTTL: 5 * time.Second, RenewEvery: time.Second}
	a, err := NewMember(cfg, "a", s, Clock{Local: ahead, Shared: shared.now}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newTestMember(t, "b", s, shared)
	ctx := context.Background()
	for range 2 {
		a.Rebalance(ctx)
		b.Rebalance(ctx)
	}
	if ga, gb := partitionsOf(a.Owned()), partitionsOf(b.Owned()); !slices.Equal(ga, []int{0, 2}) || !slices.Equal(gb, []int{1, 3}) {
		t.Fatalf("a (host clock 10 min ahead) owns %v, b owns %v; want [0 2] and [1 3]", ga, gb)
	}
}

func TestAMemberNeedsBothClocks(t *testing.T) {
	cfg := Config{Partitions: 4, LeaseTTL: 5 * time.Second, RenewEvery: time.Second}
	for _, c := range []Clock{{Local: time.Now}, {Shared: time.Now}} {
		if _, err := NewMember(cfg, "a", newMemStore(time.Now), c, nil, nil); err == nil {
			t.Errorf("NewMember with clocks local %t, shared %t: no error", c.Local != nil, c.Shared != nil)
		}
	}
}
