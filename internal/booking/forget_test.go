package booking

import (
	"context"
	"slices"
	"testing"
	"time"
)

// forgetHook is memStore with a step run once, just before a Forget: what
// other instances do while a worker's removal is on its way.
type forgetHook struct {
	*memStore
	hook func()
}

func (f *forgetHook) Forget(ctx context.Context, id string, due time.Time) error {
	if h := f.hook; h != nil {
		f.hook = nil
		h()
	}
	return f.memStore.Forget(ctx, id, due)
}

// A worker that read a claimed booking as closed (accepted) removes its
// index entry only as its claim left it. Meanwhile (the instance paused
// after its read) the driver backed out and the booking reopened with an
// entry of its own: a plain removal landing then left it searching in no
// index, with nothing to advance it ever again (a reviewer's finding; the
// same test against a plain removal failed, the booking searching a minute
// past its deadline).
func TestALateForgetNeverStrandsAReopenedBooking(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "d1")
	b, claimed := r.leftoverClaimed(t)
	r.svc.store = &forgetHook{memStore: r.store, hook: func() {
		r.fleet.mu.Lock()
		r.fleet.free = nil // nobody else to take it for now
		r.fleet.mu.Unlock()
		if _, err := r.svc.Respond(ctx, "d1", b.ID, time.Time{}, false); err != nil {
			t.Errorf("back out: %v", err)
		}
	}}
	if err := r.svc.advance(ctx, claimed); err != nil {
		t.Fatalf("advance: %v", err)
	}
	got, err := r.store.Get(ctx, b.ID)
	r.store.mu.Lock()
	_, indexed := r.store.due[b.ID]
	r.store.mu.Unlock()
	if err != nil || !got.Status.Open() || !indexed {
		t.Fatalf("booking %s (%v), indexed %v: want it open and indexed", got.Status, err, indexed)
	}
}

// An entry left in the open index by a booking no longer open (an accepted
// booking whose entry a claim had moved, so that the accept's conditional
// removal missed it) is forgotten by the worker that claims it.
func TestALeftoverEntryIsForgottenByItsClaim(t *testing.T) {
	r := newRig(t, "d1")
	b, claimed := r.leftoverClaimed(t)
	if err := r.svc.advance(context.Background(), claimed); err != nil {
		t.Fatal(err)
	}
	r.store.mu.Lock()
	_, indexed := r.store.due[b.ID]
	r.store.mu.Unlock()
	if indexed {
		t.Fatal("an accepted booking's leftover entry, claimed and read, is still indexed")
	}
}

// leftoverClaimed is a booking accepted by d1 whose entry stayed in the
// open index (its removal after the accept was lost, or missed a score a
// claim had moved), come due and claimed, as a worker receives it.
func (r *rig) leftoverClaimed(t *testing.T) (Booking, queued) {
	t.Helper()
	b := r.acceptedByD1(t)
	r.store.mu.Lock()
	r.store.due[b.ID] = r.clk.now()
	r.store.mu.Unlock()
	now := r.clk.now()
	ids, err := r.store.Claim(context.Background(), nil, now, r.svc.cfg.ClaimHold, 10)
	if err != nil || !slices.Contains(ids, b.ID) {
		t.Fatalf("claim = %v, %v; want %s", ids, err, b.ID)
	}
	return b, queued{id: b.ID, until: now.Add(r.svc.cfg.ClaimHold)}
}
