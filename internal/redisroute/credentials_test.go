package redisroute_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A password rotated in --redis-password-file is used from the next
// connection on. The rotation (drill.Credentials.Rotate) is the harshest
// order a secret manager and an operator can take: the new password
// added, the file rewritten, the old password removed and every
// connection killed within milliseconds, so that every command after it
// needs a new connection. Every call still succeeds. Then the file goes
// away (a secret unmounted): the password read before is kept, and said.
// Before, the file was read once at start and every call after the first
// rotation failed (WRONGPASS).
func TestARotatedPasswordFileIsUsedFromTheNextConnection(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ctx := ctxFor(t, 60*time.Second)
	cr, err := drill.NewCredentials(ctx, c, "rotor", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	r := routerFromFlags(t, ctx, reg, "--redis-addrs", c.Addrs()[0], "--redis-user", cr.User, "--redis-password-file", cr.File)
	calls := func(phase string) { t.Helper(); setAndGet(t, ctx, r, "rotation:"+phase) }
	calls("before")

	if killed, err := cr.Rotate(ctx); err != nil || killed == 0 {
		t.Fatalf("rotation: %v (%d connections killed)", err, killed)
	}
	calls("after the rotation")

	if err := os.Remove(cr.File); err != nil {
		t.Fatal(err)
	}
	if err := killAll(ctx, c, cr.User); err != nil {
		t.Fatal(err)
	}
	calls("with the file gone")

	if changed, _ := counter(t, reg, "apollo_redis_password_changes_total", ""); changed != 1 {
		t.Errorf("apollo_redis_password_changes_total = %v, want 1", changed)
	}
	if failed, _ := counter(t, reg, "apollo_redis_password_file_errors_total", ""); failed == 0 {
		t.Error("apollo_redis_password_file_errors_total = 0 after the file went away")
	}
}

// killAll kills every connection of user and checks there were some.
func killAll(ctx context.Context, c *localcluster.Cluster, user string) error {
	n, err := c.KillClients(ctx, user)
	if err == nil && n == 0 {
		err = fmt.Errorf("no connection of %s to kill", user)
	}
	return err
}

// routerFromFlags is a router configured as apollo serve configures it,
// from its flags, with its metrics on reg; closed when the test ends.
func routerFromFlags(t *testing.T, ctx context.Context, reg *prometheus.Registry, args ...string) *redisroute.Router {
	t.Helper()
	cfg := redisroute.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	flags := cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := flags.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	r, err := redisroute.New(ctx, cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// setAndGet writes 30 keys under prefix and reads each back: every call
// must succeed.
func setAndGet(t *testing.T, ctx context.Context, r *redisroute.Router, prefix string) {
	t.Helper()
	for i := range 30 {
		key := fmt.Sprintf("%s:%d", prefix, i)
		if err := r.Do(ctx, redisroute.Write("SET", key, "v")).Err; err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if err := r.Do(ctx, redisroute.Read("GET", key)).Err; err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
	}
}
