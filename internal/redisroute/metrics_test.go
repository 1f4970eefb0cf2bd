package redisroute

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A node that left the cluster's slot map (removed or replaced) leaves the
// per-node gauges too: ejected for ever, it would keep its alert firing.
// One that comes back (restarted) has them again, its ejections from 0.
func TestTheSeriesOfANodeThatLeftTheTopologyAreDeletedAndStartAgainOnItsReturn(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	stays, leaves := &node{addr: "10.0.0.1:7000"}, &node{addr: "10.0.0.2:7000"}
	m.forNode(stays.addr)
	m.forNode(leaves.addr)
	m.ejected.WithLabelValues(leaves.addr).Set(1)
	m.replicaBehind.WithLabelValues(leaves.addr).Set(1)
	if n := testutil.CollectAndCount(m.ejected); n != 2 {
		t.Fatalf("%d ejected series before, want 2 (every node from the start)", n)
	}
	// Every reason's ejection count reads 0 from the start: the first
	// ejection is an increase, which ApolloRedisNodeFlapping counts.
	if n, want := testutil.CollectAndCount(m.ejections), 2*len(ejectReasons); n != want {
		t.Fatalf("%d ejection series before, want %d (every node and reason from the start)", n, want)
	}
	m.followTopology(&topology{nodes: []*node{stays, leaves}}, &topology{nodes: []*node{stays}})
	if n := testutil.CollectAndCount(m.ejected); n != 1 {
		t.Errorf("%d ejected series after the node left, want 1", n)
	}
	if v := testutil.ToFloat64(m.ejected.WithLabelValues(stays.addr)); v != 0 {
		t.Errorf("the node that stays reads ejected %v", v)
	}
	if n := testutil.CollectAndCount(m.replicaBehind); n != 0 {
		t.Errorf("%d replica-behind series after the node left, want 0", n)
	}
	if n, want := testutil.CollectAndCount(m.ejections), len(ejectReasons); n != want {
		t.Errorf("%d ejection series after the node left, want %d", n, want)
	}
	// Back in the slot map (a failed node restarted), still ejected: its
	// series start again, its gauge as it is, its ejections from 0.
	leaves.ejected.Store(true)
	m.followTopology(&topology{nodes: []*node{stays}}, &topology{nodes: []*node{stays, leaves}})
	if n, want := testutil.CollectAndCount(m.ejections), 2*len(ejectReasons); n != want {
		t.Errorf("%d ejection series after the node came back, want %d", n, want)
	}
	if v := testutil.ToFloat64(m.ejected.WithLabelValues(leaves.addr)); v != 1 {
		t.Errorf("the node back, still ejected, reads ejected %v", v)
	}
}
