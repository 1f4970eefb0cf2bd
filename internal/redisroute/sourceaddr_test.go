package redisroute_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// TestEveryConnectionComesFromTheSourceAddress: with a source address,
// every node sees the router's connections (reads, writes, probes and the
// checks that ask every node) come from it, over plain TCP and TLS alike.
func TestEveryConnectionComesFromTheSourceAddress(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "tls"}[tlsOn]
		t.Run(name, func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) {
				cfg.Primaries, cfg.Replicas = 3, 1
				cfg.TLS = tlsOn
			})
			ctx := ctxFor(t, 20*time.Second)
			source := netip.MustParseAddr("127.0.0.77")
			r := newRouter(t, c, func(cfg *redisroute.Config) {
				cfg.SourceAddr = source
				cfg.TLS = c.TLSConfig()
			})
			if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", "src:a", "1"), redisroute.Read("GET", "src:b")}).Err(); err != nil {
				t.Fatalf("a call from %s: %v", source, err)
			}
			for _, n := range c.Nodes() {
				from := waitClientsFrom(ctx, t, n, source)
				if from == 0 {
					t.Errorf("node %s has no connection from %s", n.Addr, source)
				}
			}
		})
	}
}

// waitClientsFrom counts n's client connections from source, waiting up
// to a few seconds for the router's periodic checks to reach it.
func waitClientsFrom(ctx context.Context, t *testing.T, n *localcluster.Node, source netip.Addr) int {
	t.Helper()
	var count int
	for range 50 {
		list, err := n.Client().ClientList(ctx).Result()
		if err != nil {
			t.Fatalf("CLIENT LIST on %s: %v", n.Addr, err)
		}
		count = strings.Count(list, " addr="+source.String()+":")
		if count > 0 {
			return count
		}
		time.Sleep(100 * time.Millisecond)
	}
	return count
}
