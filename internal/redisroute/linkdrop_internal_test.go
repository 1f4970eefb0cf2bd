package redisroute

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// A primary that dies between the two asks of a replication check: it
// answers first, listing its replicas in step, and then its replicas,
// asked next, say their link is down. They are the freshest copies there
// are, yet the check held them out as behind, and with the primary dead
// every read of the shard failed until the next check, half a second
// later (TestPrimaryCrashFailsOver: 6,190 of 498,360 reads failed, when
// its crash fell on a check; 2 package runs in 3). A link that drops
// between the two answers teaches nothing the primary's list did not: the
// next check tells a dead primary from a replica cut off from a live one.
func TestAPrimaryThatDiesBetweenTheTwoAsksOfACheckLeavesItsReplicasServing(t *testing.T) {
	c := clustertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	cfg.Username, cfg.Password = c.Config().User, c.Config().Password
	cfg.ReplicaCheckInterval, cfg.RefreshInterval = time.Hour, time.Hour // the test asks
	r, err := New(ctx, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	topo := r.topo.Load()
	s := topo.shards[0]
	key := keyOfShard(topo, s)
	set := Write("SET", key, "v1")
	set.Acks = len(s.replicas)
	if res := r.Do(ctx, set); res.Err != nil {
		t.Fatal(res.Err)
	}
	r.checkReplication()
	for _, n := range s.replicas {
		if n.behind.Load() {
			t.Fatalf("replica %s behind before the fault: %+v", n.addr, n.repl.Load())
		}
	}

	primaries, others := topo.primariesAndOthers()
	asked := r.clock.Now()
	ans := newReplicationAnswers()
	r.askReplication(ans, primaries, asked)
	if err := processAt(t, c, s.primary.addr).Kill(); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.replicas {
		waitLinkDown(t, ctx, processAt(t, c, n.addr))
	}
	r.askReplication(ans, others, asked)
	r.judgeReplication(topo, ans, asked)

	for _, n := range s.replicas {
		if n.behind.Load() {
			t.Errorf("replica %s held out of reads: %q", n.addr, n.repl.Load().reason)
		}
	}
	for i := range 20 {
		got := r.Exec(ctx, []Cmd{Read("GET", key)})[0]
		if got.Err != nil || got.Val != "v1" {
			t.Fatalf("read %d of the shard whose primary died: %v, %v", i, got.Val, got.Err)
		}
	}
	// The next check finds the primary gone: its replicas serve on.
	r.checkReplication()
	for _, n := range s.replicas {
		if v := n.repl.Load(); n.behind.Load() || v.reason != primaryUnreachable {
			t.Errorf("replica %s at the next check: behind %v, %q; want serving, %q", n.addr, n.behind.Load(), v.reason, primaryUnreachable)
		}
	}
}

// keyOfShard is a key whose slot s serves in t.
func keyOfShard(t *topology, s *shard) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("linkdrop:%d", i); t.slots[Slot(k)] == s {
			return k
		}
	}
}

// processAt is the node of c listening on addr.
func processAt(t *testing.T, c *localcluster.Cluster, addr string) *localcluster.Node {
	t.Helper()
	for _, n := range c.Nodes() {
		if n.Addr == addr {
			return n
		}
	}
	t.Fatalf("no node of the cluster at %s", addr)
	return nil
}

// waitLinkDown waits until replica n says its replication link is down.
func waitLinkDown(t *testing.T, ctx context.Context, n *localcluster.Node) {
	t.Helper()
	for give := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, err := n.Info(ctx, "replication")
		if err == nil && strings.Contains(info, "master_link_status:down") {
			return
		}
		if time.Now().After(give) {
			t.Fatalf("%s: replication link still up 10 s after its primary died: %v\n%s", n.Addr, err, info)
		}
	}
}
