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

// A node's certificate expiry is exported for the nodes of the slot map
// from what each presented last: a node back in the slot map shows it
// again at the next check (its series made again at 0 meanwhile), and a
// node outside it (a seed address by name) shows none.
func TestACertificateExpiryIsExportedForTheSlotMapsNodesFromWhatTheyPresented(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{m: m}
	inMap, seed := &node{addr: "10.0.0.1:7000"}, &node{addr: "redis.internal:7000"}
	for _, n := range []*node{inMap, seed} {
		m.forNode(n.addr)
		n.certExpiry.Store(1_900_000_000)
	}
	r.topo.Store(&topology{nodes: []*node{inMap}})
	r.exportCertExpiry()
	if v := testutil.ToFloat64(m.nodeCertExpiry.WithLabelValues(inMap.addr)); v != 1_900_000_000 {
		t.Errorf("the node of the slot map reads %v", v)
	}
	if v := testutil.ToFloat64(m.nodeCertExpiry.WithLabelValues(seed.addr)); v != 0 {
		t.Errorf("the seed outside the slot map reads %v, want 0", v)
	}
	m.followTopology(&topology{nodes: []*node{inMap}}, &topology{})
	m.followTopology(&topology{}, &topology{nodes: []*node{inMap}})
	if v := testutil.ToFloat64(m.nodeCertExpiry.WithLabelValues(inMap.addr)); v != 0 {
		t.Fatalf("the node back in the slot map reads %v before a check, want 0 (made again)", v)
	}
	r.exportCertExpiry()
	if v := testutil.ToFloat64(m.nodeCertExpiry.WithLabelValues(inMap.addr)); v != 1_900_000_000 {
		t.Errorf("the node back in the slot map reads %v after a check", v)
	}
}
