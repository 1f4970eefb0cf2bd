package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A reservation a failover could undo must not count: a driver transition
// no replica acknowledged is reported as failed (unconfirmed), not done.
func TestADriverTransitionNoReplicaAcknowledgedIsNotDone(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	cfg := redisstore.DefaultConfig()
	cfg.Acks = 1
	s, err := redisstore.NewDrivers(newRouterFor(t, c), cfg, driver.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	online(t, s, "d1", 1.30, 103.80, t0, "car")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	replica := c.Replicas(ctx, 0)[0]
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	_, err = s.Apply(ctx, "d1", driver.Transition{Event: driver.EventReserve, BookingID: "bk-1", Until: t0.Add(time.Minute)}, t0)
	if !errors.Is(err, redisroute.ErrUnconfirmed) {
		t.Fatalf("reserve with its replica paused = %v, want ErrUnconfirmed", err)
	}
}
