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

// A write that reaches Redis after its deadline does nothing. The primary
// hangs (SIGSTOP) with the heartbeat's script in its socket; the caller
// gives up at its deadline and is told the write may not have happened;
// when the primary wakes it runs what it had received. Without a check of
// the deadline in the script, the heartbeat lands then, long after the
// answer: nobody can say when an unanswered write stops being able to
// land, and a checker has to keep it open to the end of the run.
func TestAWriteThatReachesRedisAfterItsDeadlineDoesNothing(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	s, _ := newStore(t, c)
	online(t, s, "d1", 1.30, 103.80, t0, "car")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	primary := c.Primary(ctx, 0)
	if err := primary.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			primary.Resume()
		}
	}()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := s.Heartbeat(short, "d1", driver.Location{Lat: 1.31, Lng: 103.81}, t0.Add(time.Second))
	cancelShort()
	if !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("heartbeat to a hung primary = %v, want ErrUnavailable", err)
	}
	time.Sleep(200 * time.Millisecond) // well past the deadline
	if err := primary.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	// The woken primary runs what it received before it answers this,
	// once the router takes it back.
	var d driver.Driver
	for {
		if d, err = s.GetFresh(ctx, "d1"); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d.Location.Lat != 1.30 || d.Location.Lng != 103.80 {
		t.Errorf("after the primary woke the driver is at %v,%v: the heartbeat given up on at its deadline landed after it", d.Location.Lat, d.Location.Lng)
	}
}
