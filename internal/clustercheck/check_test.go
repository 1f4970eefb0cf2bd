package clustercheck_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/clustercheck"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

func TestCheckHealthyClusterThenAKilledReplica(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := clustercheck.Options{Addrs: c.Addrs()[:1], ReadPolicy: "replica-preferred"}

	rep, err := clustercheck.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != clustercheck.Info || rep.ClusterState != "ok" || rep.SlotsCovered != 16384 || len(rep.Shards) != 3 || len(rep.Nodes) != 9 {
		t.Fatalf("healthy cluster: status %s, state %s, %d slots, %d shards, %d nodes; findings %+v",
			rep.Status, rep.ClusterState, rep.SlotsCovered, len(rep.Shards), len(rep.Nodes), rep.Findings)
	}
	for _, n := range rep.Nodes {
		if !n.Reachable || n.Role == "replica" && (n.LinkUp == nil || !*n.LinkUp) {
			t.Errorf("node %s: reachable %v, link %v", n.Addr, n.Reachable, n.LinkUp)
		}
	}

	victim := c.Replicas(ctx, 1)[0]
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	rep, err = clustercheck.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != clustercheck.Warning {
		t.Fatalf("with a killed replica: status %s, want warning; findings %+v", rep.Status, rep.Findings)
	}
	named := false
	for _, f := range rep.Findings {
		named = named || f.Severity == clustercheck.Warning && f.Node == victim.Addr
	}
	if !named {
		t.Errorf("no warning names the killed replica %s: %+v", victim.Addr, rep.Findings)
	}
}

func TestCheckFlagsRiskySettings(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.NodeTimeout = 15 * time.Second
	})
	rep, err := clustercheck.Run(context.Background(), clustercheck.Options{Addrs: c.Addrs()[:1], ReadPolicy: "replica-preferred"})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, f := range rep.Findings {
		codes[f.Code] = true
	}
	for _, want := range []string{"few_replicas", "node_timeout", "reads_when_down", "read_policy"} {
		if !codes[want] {
			t.Errorf("finding %s missing: %+v", want, rep.Findings)
		}
	}
}

func TestCheckUnreachableSeed(t *testing.T) {
	_, err := clustercheck.Run(context.Background(), clustercheck.Options{Addrs: []string{"127.0.0.1:1"}, Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no seed answered") {
		t.Fatalf("Run with an unreachable seed = %v", err)
	}
}
