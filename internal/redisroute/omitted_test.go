package redisroute

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// clusterSlotsReply is a CLUSTER SLOTS answer (RESP2) giving every slot to
// one shard: primary first, then replicas.
func clusterSlotsReply(addrs ...string) string { return clusterSlotsRange(0, numSlots-1, addrs...) }

// clusterSlotsRange is a CLUSTER SLOTS answer giving slots first to last
// to one shard, and no other slot to any.
func clusterSlotsRange(first, last int, addrs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*1\r\n*%d\r\n:%d\r\n:%d\r\n", 2+len(addrs), first, last)
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		fmt.Fprintf(&b, "*2\r\n$%d\r\n%s\r\n:%s\r\n", len(host), host, port)
	}
	return strings.TrimSuffix(b.String(), "\r\n")
}

// omittedRig is one shard after a failover: the old primary p is dead
// (nothing listens there), a has been promoted, b follows a. Every node
// answers CLUSTER SLOTS with view and a answers INFO replication with
// aInfo; both can change between refreshes.
type omittedRig struct {
	c          *fakeCluster
	a, b       string
	af         *fakeRESP
	view, info atomic.Pointer[string]
}

const deadPrimary = "127.0.0.1:1"

func newOmittedRig(t *testing.T, edit ...func(*Config)) *omittedRig {
	g := &omittedRig{}
	serve := func(info func() string) func([]string) string {
		return func(cmd []string) string {
			switch strings.ToUpper(cmd[0]) {
			case "HELLO":
				return "-ERR unknown command 'HELLO'"
			case "CLUSTER":
				return *g.view.Load()
			case "INFO":
				return bulkOrError(info())
			}
			return "+OK"
		}
	}
	g.af = startFakeRESP(t, serve(func() string { return *g.info.Load() }))
	bf := startFakeRESP(t, serve(func() string { return replicaINFO(g.a, true) }))
	g.a, g.b = g.af.addr(), bf.addr()
	p := deadPrimary
	g.c = newFakeCluster(t, [][]*fakeNode{{newFakeNode(p, answer(p, 2)), newFakeNode(g.a, answer(g.a, 2)), newFakeNode(g.b, answer(g.b, 2))}}, edit...)
	probeFakes(t, g.c)
	g.c.nodes[p].ejected.Store(true) // the router has seen it die
	return g
}

// refresh sets what the nodes answer, refreshes, and returns the topology.
func (g *omittedRig) refresh(t *testing.T, view []string, aInfo string) string {
	t.Helper()
	v := clusterSlotsReply(view...)
	g.view.Store(&v)
	g.info.Store(&aInfo)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.c.r.refresh(ctx, refreshConnError); err != nil {
		t.Fatal(err)
	}
	return g.c.r.topo.Load().String()
}

func (g *omittedRig) askedForINFO() bool { return slices.Contains(g.af.commands(), "INFO") }

func portOf(addr string) int {
	var p int
	fmt.Sscan(addr[strings.LastIndexByte(addr, ':')+1:], &p)
	return p
}

// Right after a failover, CLUSTER SLOTS leaves out a replica until the
// cluster has gossiped its replication offset (isReplicaAvailable in
// cluster_legacy.c): the replica that went on to the new primary at once is
// missing for a moment, and a router that took that view would send the
// shard's whole read load to the new primary until its next periodic
// refresh, seconds later. A refresh keeps a replica the previous topology
// had for those slots when the new primary lists it as online and in step,
// and only then.
func TestARefreshKeepsAReplicaClusterSlotsOmitsWhileItsPrimaryListsIt(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(*Config)
		aInfo    func(b string) string // INFO replication of the new primary a
		bListed  bool                  // CLUSTER SLOTS lists b (and the old primary)
		aDead    bool                  // the router has ejected a
		wantB    bool                  // b is a replica of a after the refresh
		wantInfo bool                  // a was asked for INFO replication
	}{
		{name: "a lists b online: b is kept",
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "online", 0)) }, wantB: true, wantInfo: true},
		{name: "a does not list b: b is gone",
			aInfo: func(b string) string { return primaryINFO() }, wantInfo: true},
		{name: "a lists b still syncing: b is gone",
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "wait_bgsave", 0)) }, wantInfo: true},
		{name: "a lists b with an acknowledgement older than the max lag: b is gone",
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "online", 3)) }, wantInfo: true},
		{name: "a does not answer INFO: b is gone",
			aInfo: func(b string) string { return "-ERR busy" }, wantInfo: true},
		{name: "a says it is a replica: b is gone",
			aInfo: func(b string) string { return replicaINFO(deadPrimary, false) }, wantInfo: true},
		{name: "a lists a node the old topology never had: it is not added",
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "online", 0), listed(2, "online", 0)) }, wantB: true, wantInfo: true},
		{name: "a is held for dead: it is not asked",
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "online", 0)) }, aDead: true},
		{name: "the 2019 client's policy: nothing is kept, nothing asked",
			edit:  func(c *Config) { c.Policy = Legacy2019 },
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "online", 0)) }},
		{name: "CLUSTER SLOTS omits no node: no INFO is asked",
			aInfo: func(b string) string { return primaryINFO(listed(portOf(b), "online", 0)) }, bListed: true, wantB: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var edit []func(*Config)
			if tc.edit != nil {
				edit = append(edit, tc.edit)
			}
			g := newOmittedRig(t, edit...)
			g.c.nodes[g.a].ejected.Store(tc.aDead)
			view, want := []string{g.a}, g.a
			if tc.aDead {
				want += "!"
			}
			if tc.bListed {
				view, want = []string{deadPrimary, g.a, g.b}, deadPrimary+"!>"+g.a+","+g.b
			} else if tc.wantB {
				want += ">" + g.b
			}
			if got := g.refresh(t, view, tc.aInfo(g.b)); got != want {
				t.Errorf("topology %s, want %s", got, want)
			}
			if got := g.askedForINFO(); got != tc.wantInfo {
				t.Errorf("a asked for INFO: %v, want %v (commands %v)", got, tc.wantInfo, g.af.commands())
			}
			wantKept := 0.0
			if tc.wantB && !tc.bListed {
				wantKept = 1
			}
			if got := testutil.ToFloat64(g.c.r.m.kept); got != wantKept {
				t.Errorf("apollo_redis_omitted_replicas_kept_total = %v, want %v", got, wantKept)
			}
		})
	}
}

// A kept replica does not outvote the cluster for long: it leaves when its
// primary stops listing it, and, even while listed, once CLUSTER SLOTS has
// not listed it for keptFor (a replica the cluster flagged failed, its bus
// cut off while its replication link works). It is never asked for
// CLUSTER SLOTS while kept: its slot map may not hold.
func TestAKeptReplicaLeavesWithItsPrimarysWordOrAfterAWhile(t *testing.T) {
	online := func(g *omittedRig) string { return primaryINFO(listed(portOf(g.b), "online", 0)) }

	t.Run("its primary stops listing it", func(t *testing.T) {
		g := newOmittedRig(t)
		if got, want := g.refresh(t, []string{g.a}, online(g)), g.a+">"+g.b; got != want {
			t.Fatalf("first refresh: topology %s, want %s", got, want)
		}
		if got, want := g.refresh(t, []string{g.a}, primaryINFO()), g.a; got != want {
			t.Errorf("after a stops listing b: topology %s, want %s", got, want)
		}
	})

	t.Run("CLUSTER SLOTS has not listed it for a while", func(t *testing.T) {
		g := newOmittedRig(t)
		step := g.c.r.cfg.RefreshInterval
		var got []string
		for i := 0; i < 4; i++ {
			got = append(got, g.refresh(t, []string{g.a}, online(g)))
			if slices.Contains(g.c.r.refreshCandidates(), g.c.nodes[g.b]) {
				t.Errorf("refresh %d: b, kept, is a candidate for CLUSTER SLOTS", i)
			}
			g.c.clock.Advance(step)
		}
		kept, gone := g.a+">"+g.b, g.a
		// Listed at 0; kept at 0, 5 s and 10 s (keptFor, 2 refresh intervals); gone at 15 s.
		if want := []string{kept, kept, kept, gone}; !slices.Equal(got, want) {
			t.Errorf("topologies every %s: %v, want %v", step, got, want)
		}
	})

	t.Run("listed again, it is a plain replica again", func(t *testing.T) {
		g := newOmittedRig(t)
		g.refresh(t, []string{g.a}, online(g))
		if got, want := g.refresh(t, []string{g.a, g.b}, online(g)), g.a+">"+g.b; got != want {
			t.Errorf("topology %s, want %s", got, want)
		}
		if !slices.Contains(g.c.r.refreshCandidates(), g.c.nodes[g.b]) {
			t.Errorf("b, listed again, is not a candidate for CLUSTER SLOTS")
		}
	})
}
