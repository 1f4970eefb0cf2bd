package app_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A Redis user narrowed the usual way (+@all -@dangerous) connects, reads
// and writes, but is denied INFO, and without INFO no booking is ever
// reported created: each create's proof that its replicas hold it reads
// their offsets. Apollo does not start as such a user: it names the
// nodes, what each denies and the rule that grants it. As a user with
// exactly Apollo's rules (redisstore.ACLRules) it starts.
func TestApolloRefusesToStartAsAUserDeniedCommandsItNeeds(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	ctx := context.Background()
	if err := c.SetUser(ctx, "narrow", "on", ">pw", "~*", "&*", "+@all", "-@dangerous"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetUser(ctx, "exact", append([]string{"on", ">pw"}, redisstore.ACLRules()...)...); err != nil {
		t.Fatal(err)
	}
	start := func(user string) (*app.App, error) {
		cfg := app.DefaultConfig()
		cfg.Redis.Addrs = c.Addrs()[:1]
		cfg.Redis.Username, cfg.Redis.Password = user, "pw"
		cfg.Listen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
		return app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	}

	a, err := start("narrow")
	if err == nil {
		a.Close()
		t.Fatal("apollo started as a user denied INFO")
	}
	if !errors.Is(err, app.ErrRedisRights) {
		t.Fatalf("app.New = %v, want ErrRedisRights", err)
	}
	for _, want := range []string{c.Nodes()[0].Addr, c.Nodes()[1].Addr, "denies info", "ACL SETUSER narrow +info"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "pw") {
		t.Errorf("the refusal %q prints the password", err)
	}

	a, err = start("exact")
	if err != nil {
		t.Fatalf("apollo did not start as a user with exactly its rules: %v", err)
	}
	a.Close()
}
