package localcluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// A migration left open splits its slot's keys between two primaries: the
// one it comes from serves those it still has, answers ASK for the others
// and TRYAGAIN for a command that needs both; once finished, the slot and
// every key are the other primary's.
func TestAnOpenMigrationSplitsItsSlotUntilFinished(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 60*time.Second)
	cl := c.Nodes()[0].Client()
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, "{m}").Result()
	if err != nil {
		t.Fatal(err)
	}
	p := c.Config().Primaries
	shard := int(slot) * p / 16384
	from, to := c.Primary(ctx, shard), c.Primary(ctx, (shard+1)%p)
	fc, tc := from.Client(), to.Client()
	defer fc.Close()
	defer tc.Close()
	var keys []string
	for i := range 10 {
		k := fmt.Sprintf("{m}:%d", i)
		keys = append(keys, k)
		if err := fc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, finish, err := c.OpenMigration(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if got != int(slot) {
		t.Fatalf("OpenMigration moved slot %d, want %d, the only one with keys", got, slot)
	}
	asked := 0
	for _, k := range keys {
		err := fc.Get(ctx, k).Err()
		switch {
		case err == nil:
		case strings.HasPrefix(err.Error(), "ASK "):
			asked++
		default:
			t.Fatalf("GET %s on %s: %v", k, from.Addr, err)
		}
	}
	if asked != 5 {
		t.Errorf("%d of 10 keys answered ASK, want half", asked)
	}
	if err := fc.MGet(ctx, keys...).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Errorf("MGET of keys on both sides = %v, want TRYAGAIN", err)
	}
	if err := finish(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := fc.Get(ctx, k).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
			t.Errorf("GET %s on %s after the move = %v, want MOVED", k, from.Addr, err)
		}
		if v, err := tc.Get(ctx, k).Result(); err != nil || v != strings.TrimPrefix(k, "{m}:") {
			t.Errorf("GET %s on %s after the move = %q, %v", k, to.Addr, v, err)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}
