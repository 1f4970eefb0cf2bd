package localcluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// Busy makes a node answer BUSY to every command, reads and PING included,
// while it stays up; Unbusy ends it and puts the node's settings back.
func TestABusyNodeAnswersBUSYUntilItsScriptIsKilled(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 0 })
	ctx := ctxFor(t, 30*time.Second)
	n := c.Primary(ctx, 0)
	cl := n.Client()
	defer cl.Close()
	if err := n.Busy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Busy(ctx); err == nil {
		t.Error("a second Busy succeeded, want it refused")
	}
	for _, cmd := range [][]any{{"GET", "k"}, {"SET", "k", "1"}, {"PING"}} {
		if err := cl.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY ") {
			t.Errorf("%v on a busy node = %v, want BUSY", cmd, err)
		}
	}
	if err := n.Unbusy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "{k}after", "1", 0).Err(); err != nil {
		t.Fatalf("SET once the script was killed = %v", err)
	}
	if got, err := cl.ConfigGet(ctx, "busy-reply-threshold").Result(); err != nil || got["busy-reply-threshold"] != "5000" {
		t.Errorf("busy-reply-threshold after = %v, %v, want 5000 (the default) back", got, err)
	}
	if err := n.Unbusy(ctx); err != nil {
		t.Errorf("a second Unbusy = %v, want nothing to do", err)
	}
}
