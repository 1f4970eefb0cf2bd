package redisroute_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// The console draws the cluster from Status: it must say which node is
// out and why, how stale the slot map is, and what replication reports.
func TestStatusSaysWhichNodeIsOutAndWhy(t *testing.T) {
	c := clustertest.Start(t)
	ctx := ctxFor(t, 120*time.Second)
	r := newRouter(t, c)
	st := r.Status()
	if st.LastRefresh.Reason != "initial" || !st.LastRefresh.OK || st.SlotMapAt.IsZero() {
		t.Fatalf("status after start: last refresh %+v, slot map at %v; want an initial, successful refresh", st.LastRefresh, st.SlotMapAt)
	}
	if len(st.Nodes) != len(c.Nodes()) {
		t.Fatalf("status lists %d nodes, the cluster has %d", len(st.Nodes), len(c.Nodes()))
	}
	byAddr := func() map[string]redisroute.NodeStatus {
		m := map[string]redisroute.NodeStatus{}
		for _, n := range r.Status().Nodes {
			m[n.Addr] = n
		}
		return m
	}
	for _, n := range st.Nodes {
		if n.State != redisroute.StateHealthy || n.EjectReason != "" {
			t.Errorf("%s at start: state %q, eject reason %q; want healthy, none", n.Addr, n.State, n.EjectReason)
		}
	}
	// Replication is checked in the background: every replica is soon
	// reported caught up, with the lag its primary lists.
	waitFor(t, 10*time.Second, "every replica reported caught up", func() bool {
		for _, n := range r.Status().Nodes {
			if n.Role == "replica" && (n.Replication != "caught up" || n.LagSeconds < 0) {
				return false
			}
		}
		return true
	})

	victim := replicaOf(t, c, r, 0)
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	reads := readsOnEveryShard()
	waitFor(t, 10*time.Second, victim.Addr+" reported ejected", func() bool {
		r.Exec(ctx, reads)
		n := byAddr()[victim.Addr]
		return n.State == redisroute.StateEjected && n.EjectReason != "" && !n.EjectedAt.IsZero() && !n.Healthy
	})
	for addr, n := range byAddr() {
		if addr != victim.Addr && n.State == redisroute.StateEjected {
			t.Errorf("%s ejected too (%s), only %s was killed", addr, n.EjectReason, victim.Addr)
		}
	}
	// The cluster marks it failed and leaves it out of CLUSTER SLOTS: it
	// stays listed, as gone, rather than vanish from an operator's view.
	waitFor(t, 40*time.Second, victim.Addr+" reported gone", func() bool {
		r.Exec(ctx, reads)
		n, ok := byAddr()[victim.Addr]
		return ok && n.State == redisroute.StateGone && n.Shard == 0 && n.Role == "replica" && !n.EjectedAt.IsZero()
	})
	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, victim.Addr+" re-admitted", func() bool {
		n := byAddr()[victim.Addr]
		return n.State == redisroute.StateHealthy && n.EjectReason == "" && n.EjectedAt.IsZero()
	})
}

// replicaOf is a replica node of shard s as the router sees it.
func replicaOf(t *testing.T, c *localcluster.Cluster, r *redisroute.Router, s int) *localcluster.Node {
	t.Helper()
	for _, n := range r.Nodes() {
		if n.Shard != s || n.Role != "replica" {
			continue
		}
		for _, ln := range c.Nodes() {
			if ln.Addr == n.Addr {
				return ln
			}
		}
	}
	t.Fatalf("no replica of shard %d", s)
	return nil
}

func readsOnEveryShard() []redisroute.Cmd {
	var cmds []redisroute.Cmd
	for i := range 30 {
		cmds = append(cmds, redisroute.Read("GET", fmt.Sprintf("status:{%d}", i)))
	}
	return cmds
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
