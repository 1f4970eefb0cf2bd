package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// Readiness is this instance's own: a shard that answers no instance
// leaves every instance ready (taking them all out of the load balancer
// would fail the other shards' keys too), while an instance that reaches
// no shard at all is taken out.
func TestReadinessFailsOnlyWhenNoShardAnswers(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = 60 * time.Second })
	_, _, admin := startApp(t, c)
	ctx := context.Background()
	if code := get(t, admin+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d with every shard up, want 200", code)
	}
	shard0 := append([]*localcluster.Node{c.Primary(ctx, 0)}, c.Replicas(ctx, 0)...)
	pause := func(nodes []*localcluster.Node) {
		for _, n := range nodes {
			if err := n.Pause(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Resume() })
		}
	}
	pause(shard0)
	if code := get(t, admin+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d with one shard hung, want 200: the other shards still serve", code)
	}
	var rest []*localcluster.Node
	for _, n := range c.Nodes() {
		if !slices.Contains(shard0, n) {
			rest = append(rest, n)
		}
	}
	pause(rest)
	if code := get(t, admin+"/readyz"); code != 503 {
		t.Errorf("/readyz = %d with no shard answering, want 503", code)
	}
	for _, n := range c.Nodes() {
		n.Resume()
	}
	for deadline := time.Now().Add(10 * time.Second); get(t, admin+"/readyz") != 200; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("/readyz not 200 again 10 s after every node resumed")
		}
	}
}
