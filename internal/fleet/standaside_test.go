package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// cutStore is one member's view of the shared store when that member is
// cut off from the primary that serves some partitions' keys (lease and
// open index share a hash tag, so one shard): Acquire and Renew of those
// partitions fail, as the Redis store's per-command errors do, while its
// heartbeat (apollo:fleet, on another shard) and every other lease work.
type cutStore struct {
	*memStore
	cut map[int]bool
}

var errCut = errors.New("primary unreachable from this instance")

func (c cutStore) Acquire(ctx context.Context, p int, id string, ttl time.Duration) (Lease, bool, error) {
	if c.cut[p] {
		return Lease{}, false, errCut
	}
	return c.memStore.Acquire(ctx, p, id, ttl)
}

func (c cutStore) Release(ctx context.Context, l Lease) error {
	if c.cut[l.Partition] {
		return errCut
	}
	return c.memStore.Release(ctx, l)
}

func (c cutStore) Renew(ctx context.Context, ls []Lease, ttl time.Duration) ([]bool, error) {
	var ok []Lease
	var idx []int
	var errs []error
	for i, l := range ls {
		if c.cut[l.Partition] {
			errs = append(errs, fmt.Errorf("renew partition %d: %w", l.Partition, errCut))
			continue
		}
		ok = append(ok, l)
		idx = append(idx, i)
	}
	kept := make([]bool, len(ls))
	got, err := c.memStore.Renew(ctx, ok, ttl)
	for j, i := range idx {
		if j < len(got) {
			kept[i] = got[j]
		}
	}
	return kept, errors.Join(append(errs, err)...)
}

// Member a loses its path to one primary (partition 2's shard), which
// member b still reaches. Its heartbeat's shard is reachable, so without
// standing aside a stays a live member, partition 2 stays in its share,
// a cannot renew it and b never takes it: the partition's due bookings
// wait for as long as the cut lasts (a reviewer found it; with no
// StandAsideWhile, partition 2 had no owner for 56 s of a minute). Judged
// behind (Reach.Behind, a few seconds into the cut), a stands aside: b
// takes every partition, 2 once its lease has run out, and a takes its
// share back once it can do it again.
func TestAMemberCutOffFromAPrimaryStandsAsideAndTheOthersTakeItsShare(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := newMemStore(clk.now)
	a := newTestMember(t, "a", cutStore{memStore: s}, clk)
	b := newTestMember(t, "b", s, clk)
	var behind error
	a.StandAsideWhile(func() error { return behind })
	ctx := context.Background()
	round := func() (owners map[int]string) {
		clk.advance(time.Second)
		a.Rebalance(ctx)
		b.Rebalance(ctx)
		owners = map[int]string{}
		for _, m := range []*Member{a, b} {
			for _, p := range partitionsOf(m.Owned()) {
				if o, ok := owners[p]; ok {
					t.Fatalf("partition %d acted on by %s and %s", p, o, m.ID())
				}
				owners[p] = m.ID()
			}
		}
		return owners
	}
	for range 2 {
		round()
	}
	if ga, gb := partitionsOf(a.Owned()), partitionsOf(b.Owned()); !slices.Equal(ga, []int{0, 2}) || !slices.Equal(gb, []int{1, 3}) {
		t.Fatalf("before the cut: a owns %v, b owns %v", ga, gb)
	}

	a.store = cutStore{memStore: s, cut: map[int]bool{2: true}} // the cut begins
	var unowned time.Duration
	for elapsed := time.Second; elapsed <= time.Minute; elapsed += time.Second {
		if elapsed == 3*time.Second {
			behind = errors.New("another instance reaches a primary this one does not")
		}
		if _, ok := round()[2]; !ok {
			unowned += time.Second
		}
	}
	if got := partitionsOf(a.Owned()); len(got) != 0 {
		t.Errorf("a owns %v while it stands aside, want none", got)
	}
	if got := partitionsOf(b.Owned()); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("b owns %v while a stands aside, want every partition", got)
	}
	// Its lease, which a could neither renew nor hand back, runs out
	// (5 s) after the judgement.
	if limit := 3*time.Second + 2*a.cfg.LeaseTTL; unowned > limit {
		t.Errorf("partition 2 was owned by no member for %s of the minute (b reaches it all along), want at most %s", unowned, limit)
	}

	// A path that comes and goes: judged able for a round, then behind
	// again, a stays aside (its share does not move to and fro).
	for _, err := range []error{nil, nil, behind, nil, behind} {
		behind = err
		round()
		if got := partitionsOf(a.Owned()); len(got) != 0 {
			t.Fatalf("a owns %v one round after it was judged able, between two judgements behind", got)
		}
	}
	if got := partitionsOf(b.Owned()); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("b owns %v while a's path comes and goes, want every partition", got)
	}

	a.store, behind = cutStore{memStore: s}, nil // healed, and judged so
	for range 3 + 3 {                            // its rounds able, then a round each to hand over and take
		round()
	}
	if ga, gb := partitionsOf(a.Owned()), partitionsOf(b.Owned()); !slices.Equal(ga, []int{0, 2}) || !slices.Equal(gb, []int{1, 3}) {
		t.Errorf("after the cut healed: a owns %v, b owns %v; want [0 2] and [1 3] again", ga, gb)
	}
}
