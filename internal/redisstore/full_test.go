package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A primary at its maxmemory (with the default noeviction policy) refuses
// every write that adds data, OOM, before the command or a script's first
// write runs. It is the cluster that cannot serve, not a bug of Apollo's:
// the store says ErrUnavailable and ErrFull, nothing is written, reads are
// still served, and writes work again once there is room.
func TestAWriteToAFullPrimaryIsRefusedAndNothingIsWritten(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	s, _ := newStore(t, c)
	online(t, s, "d1", 1.30, 103.80, t0, "car")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	primary := c.Primary(ctx, 0)
	if err := primary.Client().ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if err := primary.Client().ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
			t.Error(err)
		}
		restored = true
	}
	defer func() {
		if !restored {
			restore()
		}
	}()

	_, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.31, Lng: 103.81}, t0.Add(time.Second))
	if !errors.Is(err, redisstore.ErrUnavailable) || !errors.Is(err, redisstore.ErrFull) {
		t.Fatalf("heartbeat to a full primary = %v, want ErrUnavailable and ErrFull", err)
	}
	_, err = s.Apply(ctx, "d1", driver.Transition{Event: driver.EventGoOffline}, t0.Add(time.Second))
	if !errors.Is(err, redisstore.ErrFull) {
		t.Fatalf("go_offline on a full primary = %v, want ErrFull", err)
	}
	d, err := s.GetFresh(ctx, "d1")
	if err != nil {
		t.Fatalf("a read from a full primary = %v, want it served", err)
	}
	if d.Location.Lat != 1.30 || d.Status != driver.StatusAvailable {
		t.Errorf("after two refused writes the driver is %s at %v: a refused write changed it", d.Status, d.Location.Lat)
	}
	restore()
	if _, err := s.Heartbeat(ctx, "d1", driver.Location{Lat: 1.31, Lng: 103.81}, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("heartbeat once there is room = %v", err)
	}
}
