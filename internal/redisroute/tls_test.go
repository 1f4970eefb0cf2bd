package redisroute_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg, func(cfg *redisroute.Config) { cfg.TLS = c.TLSConfig() })
	if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", "tls:a", "1"), redisroute.Write("SET", "tls:b", "2")}).Err(); err != nil {
		t.Fatalf("writes over TLS: %v", err)
	}
	res := r.Exec(ctx, []redisroute.Cmd{redisroute.Read("GET", "tls:a"), redisroute.Read("GET", "tls:b")})
	if err := res.Err(); err != nil || res[0].Val != "1" || res[1].Val != "2" {
		t.Fatalf("reads over TLS: %v %v %v", res[0].Val, res[1].Val, err)
	}
	// Every node's certificate expiry is known (localcluster's are valid
	// for a day) once a handshake was made with it: the probes and checks
	// reach every node.
	for _, n := range c.Nodes() {
		waitMetric(t, reg, "apollo_redis_node_cert_expiry_timestamp_seconds", n.Addr, func(v float64) bool {
			left := time.Until(time.Unix(int64(v), 0))
			return left > 23*time.Hour && left < 25*time.Hour
		})
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

// A cluster that asks for client certificates (tls-auth-clients yes,
// Redis's default) is served with --redis-tls-cert and --redis-tls-key,
// and a certificate renewed on disk (as cert-manager renews one) is used
// from the next connection on: the first certificate expires after the
// renewal, every connection is killed, and every call still succeeds.
// Before, the files were not flags at all; a certificate loaded once at
// start would fail every new connection once it expired.
func TestAClientCertificateRenewedOnDiskIsUsedFromTheNextConnection(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.TLS, cfg.TLSClientAuth = true, true
	})
	ctx := ctxFor(t, 60*time.Second)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	expires := time.Now().Add(4 * time.Second)
	if err := c.IssueClientCert(certFile, keyFile, expires); err != nil {
		t.Fatal(err)
	}

	// Without a certificate the cluster refuses the client.
	bare := redisroute.DefaultConfig()
	bare.Addrs, bare.DialTimeout = c.Addrs()[:1], time.Second
	bare.TLS = &tls.Config{RootCAs: c.TLSConfig().RootCAs, MinVersion: tls.VersionTLS12}
	if r, err := redisroute.New(ctx, bare, nil, nil); err == nil {
		r.Close()
		t.Fatal("a client without a certificate connected to a cluster that asks for one")
	}

	reg := prometheus.NewRegistry()
	r := routerFromFlags(t, ctx, reg, "--redis-addrs", c.Addrs()[0], "--redis-tls", "--redis-tls-ca", c.CAFile(),
		"--redis-tls-cert", certFile, "--redis-tls-key", keyFile)
	calls := func(phase string) { t.Helper(); setAndGet(t, ctx, r, "cert:"+phase) }
	calls("before")
	if got, _ := counter(t, reg, "apollo_redis_tls_client_cert_expiry_timestamp_seconds", ""); int64(got) != expires.Unix() {
		t.Errorf("expiry gauge = %v, want %d", got, expires.Unix())
	}

	renewed := time.Now().Add(time.Hour)
	if err := c.IssueClientCert(certFile, keyFile, renewed); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expires) + time.Second) // the first certificate has expired
	if err := killAll(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	// go-redis does not check a pooled TLS connection before use (it
	// cannot peek under the TLS layer), so a write may first meet one of
	// the killed connections and be of unknown outcome (ErrAmbiguous,
	// never replayed: G1): once for each connection the router held. Any
	// other failure — a new connection refused — fails the test, and the
	// writes must soon all succeed.
	stale, inARow := 0, 0
	for i := 0; inARow < 100; i++ {
		err := r.Do(ctx, redisroute.Write("SET", fmt.Sprintf("cert:flush:%d", i), "v")).Err
		switch {
		case err == nil:
			inARow++
		case errors.Is(err, redisroute.ErrAmbiguous) && stale < 100:
			stale, inARow = stale+1, 0
		default:
			t.Fatalf("after the first expired, write %d (%d met a killed connection): %v", i, stale, err)
		}
	}
	t.Logf("%d writes met a killed connection", stale)
	calls("after the first expired")
	if got, _ := counter(t, reg, "apollo_redis_tls_client_cert_expiry_timestamp_seconds", ""); int64(got) != renewed.Unix() {
		t.Errorf("expiry gauge = %v, want %d (the renewed certificate's)", got, renewed.Unix())
	}
}
