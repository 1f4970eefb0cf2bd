package localcluster_test

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

func chains(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables", "-w", "-S").Output()
	if err != nil {
		t.Fatalf("iptables -S: %v", err)
	}
	return string(out)
}

// The partition of the issue: a primary cut off from every other node while
// its clients still reach it. The majority promotes its replica; the old
// primary, in the minority, takes a write that no replica acknowledges; once
// the partition heals it rejoins as a replica and that write is gone.
func TestAnIsolatedPrimaryIsReplacedAndItsMinorityWriteIsLost(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Replicas, cfg.NodeTimeout, cfg.OwnAddrs = 1, time.Second, true
	})
	ctx := ctxFor(t, 60*time.Second)
	old, replica := c.Primary(ctx, 0), c.Replicas(ctx, 0)[0]
	if strings.HasPrefix(old.Addr, "127.0.0.1:") || old.Addr[:strings.LastIndexByte(old.Addr, '.')] != replica.Addr[:strings.LastIndexByte(replica.Addr, '.')] {
		t.Fatalf("nodes on %s and %s, want addresses of their own on one /24", old.Addr, replica.Addr)
	}
	key := keyOnShard(t, ctx, c, 0)

	if err := c.Isolate(ctx, old); err != nil {
		t.Fatal(err)
	}
	cl := old.Client()
	defer cl.Close()
	if err := cl.Set(ctx, key, "minority", 0).Err(); err != nil {
		t.Fatalf("the isolated primary refused a write at once: %v", err)
	}
	if n, err := cl.Do(ctx, "WAIT", 1, 300).Int(); err != nil || n != 0 {
		t.Fatalf("WAIT on the isolated primary = %d, %v; want no replica to acknowledge", n, err)
	}
	if err := c.WaitRole(ctx, replica, "primary"); err != nil {
		t.Fatalf("the majority did not promote the replica: %v", err)
	}
	if err := c.Rejoin(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRole(ctx, old, "replica"); err != nil {
		t.Fatalf("the old primary did not rejoin as a replica: %v", err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	nc := replica.Client()
	defer nc.Close()
	if got, err := nc.Get(ctx, key).Result(); err == nil {
		t.Fatalf("the new primary has %s = %q; the minority write should be lost", key, got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := chains(t); strings.Contains(s, "APOLLO-") {
		t.Fatalf("Close left firewall rules behind:\n%s", s)
	}
}

// A client cut off from the cluster reaches no node until it is
// reconnected, while a client from another address reaches every one.
func TestAClientCutOffReachesNoNodeUntilReconnected(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Replicas, cfg.OwnAddrs = 1, true
	})
	ctx := ctxFor(t, 60*time.Second)
	host, err := c.ClientHost(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CutOff(ctx, "127.0.0.1"); err == nil {
		t.Fatal("CutOff took an address that is not the cluster's")
	}
	ping := func(n *localcluster.Node, from string) error {
		cl := clientFrom(c, from, n.Addr)
		defer cl.Close()
		return cl.Ping(ctx).Err()
	}
	reconnect, err := c.CutOff(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		if err := ping(n, host); err == nil {
			t.Errorf("node %s answered a client cut off from it", n.Addr)
		}
		if err := ping(n, "127.0.0.1"); err != nil {
			t.Errorf("node %s did not answer another client: %v", n.Addr, err)
		}
	}
	if err := reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		if err := ping(n, host); err != nil {
			t.Errorf("node %s did not answer the client reconnected: %v", n.Addr, err)
		}
	}
	if strings.Contains(chains(t), host) {
		t.Error("rules naming the client are left after reconnect")
	}
}

// A client whose answers are cut still writes: its command arrives and
// runs, and it hears nothing back, nor can it connect again, until
// reconnected.
func TestAClientWhoseAnswersAreCutStillWritesAndHearsNothing(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas, cfg.OwnAddrs = 3, 0, true
	})
	ctx := ctxFor(t, 60*time.Second)
	host, err := c.ClientHost(1)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes()[0]
	// A new client after the cut: go-redis's pool keeps a failed dial's
	// error for a while.
	from := clientFrom(c, host, n.Addr)
	defer from.Close()
	if err := from.Ping(ctx).Err(); err != nil { // a connection made before the cut
		t.Fatal(err)
	}
	reconnect, err := c.CutAnswers(ctx, host, n)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOnShard(t, ctx, c, 0)
	if err := from.Do(ctx, "SET", key, "sent", "NX").Err(); err == nil {
		t.Fatal("the client heard an answer through the cut")
	}
	other := n.Client()
	defer other.Close()
	if got, err := other.Get(ctx, key).Result(); err != nil || got != "sent" {
		t.Fatalf("%s = %q, %v: the cut client's write should have run", key, got, err)
	}
	again := clientFrom(c, host, n.Addr)
	defer again.Close()
	if err := again.Ping(ctx).Err(); err == nil {
		t.Fatal("the client connected again through the cut")
	}
	// Only n's answers are cut: the host reaches the other nodes.
	elsewhere := clientFrom(c, host, c.Nodes()[1].Addr)
	defer elsewhere.Close()
	if err := elsewhere.Ping(ctx).Err(); err != nil {
		t.Errorf("another node did not answer the host whose answers from %s are cut: %v", n.Addr, err)
	}
	if err := reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	after := clientFrom(c, host, n.Addr)
	defer after.Close()
	if err := after.Ping(ctx).Err(); err != nil {
		t.Fatalf("no answer once reconnected: %v", err)
	}
	if strings.Contains(chains(t), host) {
		t.Error("rules naming the client are left after reconnect")
	}
}

// clientFrom is a client of the node at addr that connects from the local
// address from (a ClientHost), with one connection, no retries and short
// timeouts: what a cut path does to it shows at once.
func clientFrom(c *localcluster.Cluster, from, addr string) *redis.Client {
	d := net.Dialer{Timeout: 300 * time.Millisecond, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return redis.NewClient(&redis.Options{Addr: addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}, Username: c.Config().User, Password: c.Config().Password, MaxRetries: -1, ReadTimeout: 500 * time.Millisecond, PoolSize: 1})
}
