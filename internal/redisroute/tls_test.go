package redisroute_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// TestTLSCluster talks to a cluster that only speaks TLS (clients, bus and
// replication), verifying its certificate against the cluster's CA.
func TestTLSCluster(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.TLS = true
	})
	ctx := ctxFor(t, 20*time.Second)
	r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.TLS = c.TLSConfig() })
	if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", "tls:a", "1"), redisroute.Write("SET", "tls:b", "2")}).Err(); err != nil {
		t.Fatalf("writes over TLS: %v", err)
	}
	res := r.Exec(ctx, []redisroute.Cmd{redisroute.Read("GET", "tls:a"), redisroute.Read("GET", "tls:b")})
	if err := res.Err(); err != nil || res[0].Val != "1" || res[1].Val != "2" {
		t.Fatalf("reads over TLS: %v %v %v", res[0].Val, res[1].Val, err)
	}
	plain := redisroute.DefaultConfig()
	plain.Addrs = c.Addrs()[:1]
	plain.DialTimeout = 200 * time.Millisecond
	if _, err := redisroute.New(ctx, plain, nil, nil); err == nil {
		t.Error("a plaintext client connected to a TLS-only cluster")
	}
	untrusted := plain
	untrusted.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	if _, err := redisroute.New(ctx, untrusted, nil, nil); err == nil {
		t.Error("a client that does not trust the cluster's CA connected")
	}
}
