package redisroute

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A node's CLUSTER SLOTS may leave out slots its cluster serves (mid
// failover, a slot held by a node it does not know yet as a primary). Such
// an answer is passed over for another node's whole one; when every node
// leaves slots out (they were removed), the fullest answer is taken, so
// refreshes go on.
func TestASlotMapThatLeavesOutSlotsIsPassedOverForAWholeOne(t *testing.T) {
	var aView, bView atomic.Pointer[string]
	serve := func(view *atomic.Pointer[string]) func([]string) string {
		return func(cmd []string) string {
			switch strings.ToUpper(cmd[0]) {
			case "HELLO":
				return "-ERR unknown command 'HELLO'"
			case "CLUSTER":
				return *view.Load()
			case "INFO":
				return bulkOrError(primaryINFO())
			}
			return "+OK"
		}
	}
	af, bf := startFakeRESP(t, serve(&aView)), startFakeRESP(t, serve(&bView))
	a, b := af.addr(), bf.addr()
	c := newFakeCluster(t, [][]*fakeNode{{newFakeNode(a, answer(a, 1)), newFakeNode(b, answer(b, 1))}})
	probeFakes(t, c)
	set := func(x *atomic.Pointer[string], s string) { x.Store(&s) }
	half, whole := clusterSlotsRange(0, numSlots/2-1, a, b), clusterSlotsReply(a, b)
	refresh := func() int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.r.refresh(ctx, refreshConnError); err != nil {
			t.Fatal(err)
		}
		return c.r.topo.Load().covered()
	}

	set(&aView, half)
	set(&bView, whole)
	// Refreshes ask the nodes in turn: each is asked first at least once.
	for i := 0; i < 4; i++ {
		if got := refresh(); got != numSlots {
			t.Fatalf("refresh %d, a's answer leaves out half the slots, b's is whole: the map covers %d slots, want %d", i, got, numSlots)
		}
	}
	set(&bView, clusterSlotsRange(0, numSlots/4-1, a, b))
	for i := 0; i < 4; i++ {
		if got := refresh(); got != numSlots/2 {
			t.Fatalf("refresh %d, every answer leaves slots out: the map covers %d slots, want the fullest answer's %d", i, got, numSlots/2)
		}
	}
}
