package booking

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/fleet"
)

// watchingStore is memStore with a Watch the test drives, counting reads.
type watchingStore struct {
	*memStore
	gets    atomic.Int64
	mu      sync.Mutex
	watches []*testWatch
	fail    error
	lostNow bool // every watch is lost as soon as made
}

type testWatch struct {
	changed chan struct{}
	lost    chan struct{}
	stopped atomic.Bool
}

func (w *watchingStore) Get(ctx context.Context, id string) (Booking, error) {
	w.gets.Add(1)
	return w.memStore.Get(ctx, id)
}

func (w *watchingStore) Watch(context.Context, string) (Watch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return Watch{}, w.fail
	}
	tw := &testWatch{changed: make(chan struct{}, 1), lost: make(chan struct{})}
	if w.lostNow {
		close(tw.lost)
	}
	w.watches = append(w.watches, tw)
	return Watch{Changed: tw.changed, Lost: tw.lost, Stop: func() { tw.stopped.Store(true) }}, nil
}

func (w *watchingStore) last() *testWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watches) == 0 {
		return nil
	}
	return w.watches[len(w.watches)-1]
}

func newWaitRig(t *testing.T) (*Service, *watchingStore, Booking) {
	t.Helper()
	ws := &watchingStore{memStore: newMemStore()}
	svc, err := NewService(DefaultConfig(), &fakeAdmit{}, &fakeFleet{drivers: nil}, ws, &fakeFleet{}, nil, fleet.Alone(1), time.Now, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := Booking{ID: "bk-1", Status: Searching, Version: 1}
	ws.bks[b.ID] = b
	return svc, ws, b
}

func waitAsync(svc *Service, ctx context.Context, id string, seen int64) chan Booking {
	out := make(chan Booking, 1)
	go func() { b, _ := svc.Wait(ctx, id, seen); out <- b }()
	return out
}

func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

func TestAWatchingWaitReadsOnlyWhenToldOfAChange(t *testing.T) {
	svc, ws, b := newWaitRig(t)
	done := waitAsync(svc, context.Background(), b.ID, 1)
	eventuallyTrue(t, "no watch", func() bool { return ws.last() != nil && ws.gets.Load() == 1 })
	time.Sleep(50 * time.Millisecond) // polling would have read again by now
	if n := ws.gets.Load(); n != 1 {
		t.Fatalf("%d reads while nothing changed, want 1", n)
	}
	ws.last().changed <- struct{}{} // a change of another field? the version is the same: wait on
	eventuallyTrue(t, "no second read", func() bool { return ws.gets.Load() == 2 })
	ws.memStore.mu.Lock()
	next := b
	next.Version, next.Status = 2, Cancelled
	ws.bks[b.ID] = next
	ws.memStore.mu.Unlock()
	ws.last().changed <- struct{}{}
	if got := <-done; got.Version != 2 {
		t.Fatalf("Wait = %+v, want version 2", got)
	}
	if !ws.last().stopped.Load() {
		t.Error("the watch was not stopped")
	}
}

func TestAWaitWhoseWatchIsLostWatchesAgainAndReads(t *testing.T) {
	svc, ws, b := newWaitRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(svc, ctx, b.ID, 1)
	eventuallyTrue(t, "no watch", func() bool { return ws.last() != nil })
	first := ws.last()
	close(first.lost)
	eventuallyTrue(t, "not watched again", func() bool { return ws.last() != first && ws.gets.Load() == 2 })
	if !first.stopped.Load() {
		t.Error("the lost watch was not stopped")
	}
	cancel()
	if got := <-done; got.Version != 1 {
		t.Fatalf("Wait at the end = %+v, want the booking as it is", got)
	}
}

func TestAWaitThatCannotWatchPolls(t *testing.T) {
	svc, ws, b := newWaitRig(t)
	ws.fail = errors.New("no pub/sub")
	done := waitAsync(svc, context.Background(), b.ID, 1)
	eventuallyTrue(t, "no polling", func() bool { return ws.gets.Load() >= 2 })
	ws.memStore.mu.Lock()
	next := b
	next.Version = 2
	ws.bks[b.ID] = next
	ws.memStore.mu.Unlock()
	if got := <-done; got.Version != 2 {
		t.Fatalf("Wait = %+v, want version 2", got)
	}
}

// A watch that fails once (a subscription timed out on a busy node) is
// polled only until it is tried again: found by the 1,000 long polls of
// internal/app on a loaded CI machine, whose waiters that failed to watch
// once polled for their whole 30 s.
func TestAWaitWhoseWatchFailedWatchesAgainAndStopsPolling(t *testing.T) {
	svc, ws, b := newWaitRig(t)
	ws.mu.Lock()
	ws.fail = errors.New("subscribe: i/o timeout")
	ws.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(svc, ctx, b.ID, 1)
	eventuallyTrue(t, "no polling", func() bool { return ws.gets.Load() >= 2 })
	ws.mu.Lock()
	ws.fail = nil
	ws.mu.Unlock()
	eventuallyTrue(t, "not watched again", func() bool { return ws.last() != nil })
	n := ws.gets.Load()
	time.Sleep(300 * time.Millisecond) // polling would have read three times by now
	if m := ws.gets.Load(); m-n > 1 {  // the watch's own first read may fall in it
		t.Fatalf("%d reads in 300 ms once watching, want 1 at most: it still polls", m-n)
	}
	cancel()
	if got := <-done; got.Version != 1 {
		t.Fatalf("Wait at the end = %+v, want the booking as it is", got)
	}
}

// A watch lost as soon as it is made, again and again (a subscription that
// cannot hold), is not spun on: after a second quick loss the wait polls.
func TestAWaitWhoseWatchesAreLostAtOnceDoesNotSpin(t *testing.T) {
	svc, ws, b := newWaitRig(t)
	ws.mu.Lock()
	ws.lostNow = true
	ws.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	<-waitAsync(svc, ctx, b.ID, 1)
	// Two watches and their reads, then a read every 100 ms, and the
	// last at the end: a spin would read thousands of times.
	if n := ws.gets.Load(); n > 10 {
		t.Fatalf("%d reads in 300 ms of watches lost at once, want a few: it spins", n)
	}
}

// A wait whose watch keeps failing (its channel's primary is down) polls
// less and less often, not every 100 ms: waiters come in crowds, and each
// read is a confirmed one. In 3 s a steady 100 ms made 30 reads or more;
// reads after 100, 200, 400 ms… (at most 1 s apart), started again at
// each failed watch (after 1 s, then 2 s), make about ten.
func TestAWaitWhoseWatchKeepsFailingPollsLessAndLess(t *testing.T) {
	svc, ws, b := newWaitRig(t)
	ws.mu.Lock()
	ws.fail = errors.New("subscribe: no primary for the channel's slot")
	ws.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	<-waitAsync(svc, ctx, b.ID, 1)
	if n := ws.gets.Load(); n > 15 || n < 3 {
		t.Fatalf("%d reads in 3 s of failed watches, want about ten: more polls as often as ever, fewer does not poll", n)
	}
}
