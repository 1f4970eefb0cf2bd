package redisroute_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A password rotated in --redis-password-file is used from the next
// connection on. The rotation is the harshest order a secret manager and
// an operator can take: the new password added, the file rewritten, the
// old password removed and every connection killed within milliseconds,
// so that every command after it needs a new connection. Every call still
// succeeds. Then the file goes away (a secret unmounted): the password
// read before is kept, and said. Before, the file was read once at start
// and every call after the first rotation failed (WRONGPASS).
func TestARotatedPasswordFileIsUsedFromTheNextConnection(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ctx := ctxFor(t, 60*time.Second)
	const user = "rotor"
	if err := c.SetUser(ctx, user, "on", ">first", "~*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "redis-password")
	writeSecret(t, file, "first")

	// The config as apollo serve builds it from its flags.
	cfg := redisroute.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	flags := cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"--redis-addrs", c.Addrs()[0], "--redis-user", user, "--redis-password-file", file}); err != nil {
		t.Fatal(err)
	}
	if err := flags.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r, err := redisroute.New(ctx, cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	calls := func(phase string) {
		t.Helper()
		for i := range 30 {
			key := fmt.Sprintf("rotation:%s:%d", phase, i)
			if err := r.Do(ctx, redisroute.Write("SET", key, "v")).Err; err != nil {
				t.Fatalf("%s: SET %s: %v", phase, key, err)
			}
			if err := r.Do(ctx, redisroute.Read("GET", key)).Err; err != nil {
				t.Fatalf("%s: GET %s: %v", phase, key, err)
			}
		}
	}
	calls("before")

	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"the new password added", func() error { return c.SetUser(ctx, user, ">second") }},
		{"the file rewritten", func() error { writeSecret(t, file, "second"); return nil }},
		{"the old password removed", func() error { return c.SetUser(ctx, user, "<first") }},
		{"every connection killed", func() error { return killAll(ctx, c, user) }},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	calls("after the rotation")

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := killAll(ctx, c, user); err != nil {
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

// writeSecret replaces path's contents at once, as a secret manager does
// (a new file renamed over the old): a reader never sees it half written.
func writeSecret(t *testing.T, path, value string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
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
