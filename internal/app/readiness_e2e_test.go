package app_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
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

// An instance cut off from a primary that another instance reaches is
// taken out of the load balancer: the cluster is fine, the fault is this
// instance's path, and the others can serve that shard. Instances cut off
// from the same primary stay in: taking them all out would fail the
// shards they do reach too. Found with verify's
// instance-primary-partition (2026-12-05): the cut instance's replicas
// answered its readiness reads, and it failed that shard's writes for as
// long as the path stayed cut. Nor does it keep its share of the
// partitions, which the others can work and it cannot (a reviewer found
// the cut primary's partitions of its share owned by nobody for as long
// as the cut lasted).
func TestAnInstanceCutOffFromAPrimaryOthersReachIsNotReady(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.OwnAddrs = true })
	ctx := context.Background()
	admins, hosts := startInstancesOwnAddrs(t, c, 2)
	primary := c.Primary(ctx, 0)
	// until polls both instances' /readyz until want(codes) or 20 s,
	// failing the test when never is seen on the way.
	until := func(what string, want, never func(a, b int) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			a, b := get(t, admins[0]+"/readyz"), get(t, admins[1]+"/readyz")
			if never != nil && never(a, b) {
				t.Fatalf("%s: /readyz answered %d and %d", what, a, b)
			}
			if want(a, b) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /readyz still %d and %d after 20 s", what, a, b)
			}
		}
	}
	reconnect, err := c.CutOff(ctx, hosts[0], primary)
	if err != nil {
		t.Fatal(err)
	}
	until("one instance cut off from a primary", func(a, b int) bool { return a == 503 && b == 200 },
		func(a, b int) bool { return b != 200 })
	// Nor does it do a share of the background work: it stands aside, and
	// the other takes every partition (the cut one's once its lease has
	// run out), then it takes its share back.
	const owned = "apollo_fleet_partitions_owned"
	partitions := metric(t, admins[1], "apollo_fleet_partitions")
	ownedUntil := func(what string, want func(a, b string) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			a, b := metric(t, admins[0], owned), metric(t, admins[1], owned)
			if want(a, b) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the instances own %s and %s of %s partitions after 20 s", what, a, b, partitions)
			}
		}
	}
	ownedUntil("one instance cut off from a primary", func(a, b string) bool { return a == "0" && b == partitions })
	if err := reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	until("the path back", func(a, b int) bool { return a == 200 && b == 200 }, nil)
	ownedUntil("the path back", func(a, b string) bool { return a != "0" && b != partitions })

	// Both cut off from it: neither is better placed, both stay in.
	var reconnects []func(context.Context) error
	for _, h := range hosts {
		r, err := c.CutOff(ctx, h, primary)
		if err != nil {
			t.Fatal(err)
		}
		reconnects = append(reconnects, r)
	}
	stillReady := time.Now().Add(5 * time.Second)
	until("both instances cut off from one primary", func(int, int) bool { return time.Now().After(stillReady) },
		func(a, b int) bool { return a != 200 || b != 200 })
	for _, r := range reconnects {
		if err := r(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A cluster that is down (a primary failed with no replica to take over,
// or one not promoted yet, with cluster-require-full-coverage) answers
// CLUSTERDOWN to every instance alike: each one's path and credentials
// work, and none is taken out (the fleet would be, whole). CI found
// /readyz 503 in TestAFailoverTakesNoInstanceOut for this.
func TestAClusterThatIsDownForEveryInstanceLeavesItReady(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.NodeTimeout = time.Second })
	_, _, admin := startApp(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range c.Replicas(ctx, 0) {
		if err := r.Client().ConfigSet(ctx, "cluster-replica-no-failover", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Primary(ctx, 0).Kill(); err != nil {
		t.Fatal(err)
	}
	waitClusterDown(ctx, t, c.Primary(ctx, 1))
	for range 10 {
		start := time.Now()
		code, body := getText(t, admin+"/readyz")
		if code != 200 {
			t.Fatalf("/readyz = %d %s while every node answers CLUSTERDOWN, want 200", code, body)
		}
		t.Logf("/readyz 200 in %s", time.Since(start).Round(time.Millisecond)) // printed, not asserted
		time.Sleep(100 * time.Millisecond)
	}
}

// An instance that reaches only a minority of the nodes, cut off from the
// rest with them, hears CLUSTERDOWN from all it reaches while the majority
// serves the other instances: it is taken out, as its probe of the
// primaries reached one of three. A reviewer found the first version of
// the test above leaving it ready for as long as the partition lasts.
func TestAnInstanceWithAMinorityOfTheNodesIsNotReady(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.OwnAddrs, cfg.NodeTimeout = true, time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admins, hosts := startInstancesOwnAddrs(t, c, 1)
	minority := c.Primary(ctx, 0)
	if err := c.Isolate(ctx, minority); err != nil {
		t.Fatal(err)
	}
	var rest []*localcluster.Node
	for _, n := range c.Nodes() {
		if n != minority {
			rest = append(rest, n)
		}
	}
	if _, err := c.CutOff(ctx, hosts[0], rest...); err != nil { // undone by the cluster's Close
		t.Fatal(err)
	}
	waitClusterDown(ctx, t, minority)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, body := getText(t, admins[0]+"/readyz")
		if code == 503 && strings.Contains(body, "no more than half of the primaries") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %s 10 s after all this instance reaches answered CLUSTERDOWN, want 503", code, body)
		}
	}
}

// An instance whose credentials every node refuses is taken out: a
// refusal is an answer of no node's state, though it is a Redis error
// reply (WRONGPASS), unlike CLUSTERDOWN.
func TestAnInstanceWhoseCredentialsEveryNodeRefusesIsNotReady(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Password = "first" })
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs, cfg.Redis.Password = c.Addrs()[:1], "first"
	_, _, admin := serveApp(t, cfg)
	if code, body := getText(t, admin+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %s before the password changed, want 200", code, body)
	}
	ctx := context.Background()
	for _, n := range c.Nodes() { // a new password, and every connection made anew
		cl := n.Client()
		for _, cmd := range [][]any{{"CONFIG", "SET", "masterauth", "second"}, {"CONFIG", "SET", "requirepass", "second"}, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}} {
			if err := cl.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%s %v: %v", n.Addr, cmd, err)
			}
		}
		cl.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, body := getText(t, admin+"/readyz")
		if code == 503 && strings.Contains(body, "no Redis shard answers") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %s 10 s after every node changed its password, want 503", code, body)
		}
	}
}

// waitClusterDown waits, until ctx ends, for n to answer CLUSTERDOWN.
func waitClusterDown(ctx context.Context, t *testing.T, n *localcluster.Node) {
	t.Helper()
	cl := n.Client()
	defer cl.Close()
	for {
		if err := cl.Get(ctx, "k").Err(); err != nil && strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s not CLUSTERDOWN in time", n.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startInstancesOwnAddrs serves n instances on c, each connecting to
// Redis from a client address of c's own, and returns their admin URLs and
// those addresses.
func startInstancesOwnAddrs(t *testing.T, c *localcluster.Cluster, n int) (admins, hosts []string) {
	t.Helper()
	for i := range n {
		host, err := c.ClientHost(i)
		if err != nil {
			t.Fatal(err)
		}
		cfg := app.DefaultConfig()
		cfg.Redis.Addrs = c.Addrs()[:1]
		cfg.Redis.SourceAddr = netip.MustParseAddr(host)
		_, _, admin := serveApp(t, cfg)
		admins, hosts = append(admins, admin), append(hosts, host)
	}
	return admins, hosts
}

// A primary that crashes or hangs is lost to every instance alike, and
// its replacement is found by one instance before the other: neither is
// ever taken out for it (the fleet least of all), as readiness compares
// the instances' reach. A reviewer expected the one that found the new
// primary first to take the others out.
func TestAFailoverTakesNoInstanceOut(t *testing.T) {
	for _, fault := range []string{"killed", "hung"} {
		t.Run(fault, func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.OwnAddrs, cfg.NodeTimeout = true, time.Second })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			admins, _ := startInstancesOwnAddrs(t, c, 2)
			old := c.Primary(ctx, 0)
			time.Sleep(2 * time.Second) // a round of reports from each
			fail := old.Kill
			if fault == "hung" {
				fail = old.Pause
				t.Cleanup(func() { old.Resume() })
			}
			if err := fail(); err != nil {
				t.Fatal(err)
			}
			var out [2]int
			var why []string // the answers that were not 200
			var polls int
			var settled time.Time // 5 s after a replica took over
			for ; settled.IsZero() || time.Now().Before(settled); time.Sleep(100 * time.Millisecond) {
				if settled.IsZero() {
					if p := c.Primary(ctx, 0); p != nil && p != old {
						settled = time.Now().Add(5 * time.Second)
					}
					if ctx.Err() != nil {
						t.Fatal("no replica took over within a minute")
					}
				}
				polls++
				for i, a := range admins {
					if code, body := getText(t, a+"/readyz"); code != 200 {
						out[i]++
						why = append(why, fmt.Sprintf("instance %d at %s: %d %s", i, time.Now().Format("15:04:05.000"), code, body))
					}
				}
			}
			t.Logf("%d polls through the failover: /readyz not 200 in %d and %d", polls, out[0], out[1])
			if out[0] > 0 || out[1] > 0 {
				t.Errorf("an instance was taken out for a primary every instance lost: %v of %d polls:\n%s", out, polls, strings.Join(why, "\n"))
			}
		})
	}
}
