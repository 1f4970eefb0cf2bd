package localcluster

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// A migration whose target took the slot (IMPORTING) but whose source
// never began to send it (OpenMigration failed between the two) is undone,
// not finished: no key went to the target, and moving the source's keys
// there would take them from the node that still serves the slot.
func TestAMigrationThatNeverBeganToSendIsUndone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	from, to := c.Primary(ctx, 0), c.Primary(ctx, 1)
	fc, tc := from.Client(), to.Client()
	defer fc.Close()
	defer tc.Close()
	stored := false
	for i := 0; i < 1000 && !stored; i++ { // a key of from's own (others answer MOVED)
		stored = fc.Set(ctx, "k"+strconv.Itoa(i), "kept", 0).Err() == nil
	}
	if !stored {
		t.Fatal("no key of the first primary's slots among k0…k999")
	}
	slot, err := c.busiestSlot(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.SlotCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.finishMigration(ctx, slot, from, to); err != nil {
		t.Fatal(err)
	}
	if open, err := ownOpenSlots(ctx, tc); err != nil || len(open) > 0 {
		t.Errorf("the target's open slots after the undo: %v, %v", open, err)
	}
	if n, err := fc.ClusterCountKeysInSlot(ctx, slot).Result(); err != nil || n == 0 {
		t.Errorf("the source holds %d keys of slot %d after the undo (%v), want its own", n, slot, err)
	}
	after, err := c.SlotCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after[from] != before[from] || after[to] != before[to] {
		t.Errorf("slots served: %d and %d after, %d and %d before", after[from], after[to], before[from], before[to])
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}
