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
)

// A cluster whose nodes delete keys to make room (a maxmemory with an
// eviction policy: volatile-lru is ElastiCache's default) can lose a
// booking reported created, or a reservation, which frees its driver for
// a second booking, without an error anywhere. Apollo does not start on
// one: it names the nodes and says what to set.
func TestApolloRefusesToStartOnNodesThatMayEvictItsKeys(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 1, 1
		cfg.ExtraArgs = []string{"maxmemory 256mb", "maxmemory-policy volatile-lru"}
	})
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = c.Addrs()[:1]
	cfg.Listen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		a.Close()
		t.Fatal("apollo started on a cluster whose nodes evict keys at their maxmemory")
	}
	if !errors.Is(err, app.ErrEvictingRedis) {
		t.Fatalf("app.New = %v, want ErrEvictingRedis", err)
	}
	for _, want := range []string{c.Nodes()[0].Addr, "volatile-lru", "maxmemory-policy noeviction"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
}
