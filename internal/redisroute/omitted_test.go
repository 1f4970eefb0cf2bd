package redisroute

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlotsReply is a CLUSTER SLOTS answer (RESP2) giving every slot to
// one shard: primary first, then replicas.
func clusterSlotsReply(addrs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*1\r\n*%d\r\n:0\r\n:%d\r\n", 2+len(addrs), numSlots-1)
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		fmt.Fprintf(&b, "*2\r\n$%d\r\n%s\r\n:%s\r\n", len(host), host, port)
	}
	return strings.TrimSuffix(b.String(), "\r\n")
}

// Right after a failover, CLUSTER SLOTS leaves out a replica until the
// cluster has gossiped its replication offset (isReplicaAvailable in
// cluster_legacy.c): the replica that went on to the new primary at once is
// missing for a moment, and a router that took that view would send the
// shard's whole read load to the new primary until its next periodic
// refresh, seconds later. A refresh keeps a replica the previous topology
// had for those slots when the new primary lists it as online, and only
// then.
func TestARefreshKeepsAReplicaClusterSlotsOmitsWhileItsPrimaryListsIt(t *testing.T) {
	port := func(addr string) int {
		var p int
		fmt.Sscan(addr[strings.LastIndexByte(addr, ':')+1:], &p)
		return p
	}
	const oldPrimary = "127.0.0.1:1" // dead: nothing listens there
	cases := []struct {
		name     string
		view     func(a, b string) []string // the CLUSTER SLOTS shard, after a's promotion
		aInfo    func(b string) string      // INFO replication of the new primary a
		want     func(a, b string) string   // the shard after the refresh
		wantInfo bool                       // a was asked for INFO replication
	}{
		{"a lists b online: b is kept",
			func(a, b string) []string { return []string{a} },
			func(b string) string { return primaryINFO(listed(port(b), "online", 0)) },
			func(a, b string) string { return a + ">" + b }, true},
		{"a does not list b: b is gone",
			func(a, b string) []string { return []string{a} },
			func(b string) string { return primaryINFO() },
			func(a, b string) string { return a }, true},
		{"a lists b still syncing: b is gone",
			func(a, b string) []string { return []string{a} },
			func(b string) string { return primaryINFO(listed(port(b), "wait_bgsave", 0)) },
			func(a, b string) string { return a }, true},
		{"a does not answer INFO: b is gone",
			func(a, b string) []string { return []string{a} },
			func(b string) string { return "-ERR busy" },
			func(a, b string) string { return a }, true},
		{"a lists a node the old topology never had: it is not added",
			func(a, b string) []string { return []string{a} },
			func(b string) string { return primaryINFO(listed(port(b), "online", 0), listed(2, "online", 0)) },
			func(a, b string) string { return a + ">" + b }, true},
		{"CLUSTER SLOTS omits no node: no INFO is asked",
			func(a, b string) []string { return []string{oldPrimary, a, b} },
			func(b string) string { return primaryINFO(listed(port(b), "online", 0)) },
			func(a, b string) string { return oldPrimary + "!>" + a + "," + b }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a, b string
			serve := func(info func() string) func([]string) string {
				return func(cmd []string) string {
					switch strings.ToUpper(cmd[0]) {
					case "HELLO":
						return "-ERR unknown command 'HELLO'"
					case "CLUSTER":
						return clusterSlotsReply(tc.view(a, b)...)
					case "INFO":
						s := info()
						if strings.HasPrefix(s, "-") {
							return s
						}
						return fmt.Sprintf("$%d\r\n%s", len(s), s)
					}
					return "+OK"
				}
			}
			af := startFakeRESP(t, serve(func() string { return tc.aInfo(b) }))
			bf := startFakeRESP(t, serve(func() string { return replicaINFO(a, true) }))
			a, b = af.addr(), bf.addr()
			p := oldPrimary

			c := newFakeCluster(t, [][]*fakeNode{{newFakeNode(p, answer(p, 2)), newFakeNode(a, answer(a, 2)), newFakeNode(b, answer(b, 2))}})
			for _, n := range c.nodes {
				n.probe = redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true,
					DialTimeout: 100 * time.Millisecond})
				t.Cleanup(func() { n.probe.Close() })
			}
			c.nodes[p].ejected.Store(true) // the router has seen it die

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.r.refresh(ctx, refreshConnError); err != nil {
				t.Fatal(err)
			}
			if got, want := c.r.topo.Load().String(), tc.want(a, b); got != want {
				t.Errorf("topology %s, want %s", got, want)
			}
			if got := slices.Contains(af.commands(), "INFO"); got != tc.wantInfo {
				t.Errorf("a asked for INFO: %v, want %v (commands %v)", got, tc.wantInfo, af.commands())
			}
		})
	}
}
