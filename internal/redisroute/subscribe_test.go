package redisroute_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

type heard struct {
	msgs chan string
	lost chan struct{}
	n    atomic.Int64
}

func newHeard() *heard { return &heard{msgs: make(chan string, 100), lost: make(chan struct{}, 1)} }

func (h *heard) handler() redisroute.Handler {
	return redisroute.Handler{
		Message: func(p string) { h.n.Add(1); h.msgs <- p },
		Lost:    func() { h.lost <- struct{}{} },
	}
}

// A message published after Subscribe returns reaches every handler of the
// channel; a cancelled handler hears no more.
func TestASubscriptionHearsWhatIsPublishedAfterItAndNothingAfterCancel(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Replicas = 1 })
	r := newRouter(t, c)
	ctx := context.Background()
	a, b := newHeard(), newHeard()
	cancelA, err := r.Subscribe(ctx, "ch:{x}", a.handler())
	if err != nil {
		t.Fatal(err)
	}
	cancelB, err := r.Subscribe(ctx, "ch:{x}", b.handler())
	if err != nil {
		t.Fatal(err)
	}
	defer cancelB()
	if err := r.Do(ctx, redisroute.Write("SPUBLISH", "ch:{x}", "one")).Err; err != nil {
		t.Fatal(err)
	}
	for _, h := range []*heard{a, b} {
		select {
		case m := <-h.msgs:
			if m != "one" {
				t.Fatalf("heard %q", m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a handler heard nothing")
		}
	}
	cancelA()
	if err := r.Do(ctx, redisroute.Write("SPUBLISH", "ch:{x}", "two")).Err; err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.msgs:
	case <-time.After(5 * time.Second):
		t.Fatal("b heard nothing")
	}
	if n := a.n.Load(); n != 1 {
		t.Fatalf("a heard %d messages, want 1: it was cancelled", n)
	}
}

// When the channel's primary dies, the subscription is reported lost (a
// failover moves the slot; messages published meanwhile would be missed),
// so its handlers read again instead of waiting for messages that never come.
func TestASubscriptionIsLostWhenItsPrimaryDies(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Replicas, cfg.NodeTimeout = 1, 2*time.Second
	})
	r := newRouter(t, c)
	ctx := context.Background()
	h := newHeard()
	channel := "ch:{x}"
	cancel, err := r.Subscribe(ctx, channel, h.handler())
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	slot := redisroute.Slot(channel)
	var primary *localcluster.Node
	for i, n := range c.Nodes()[:3] { // the primaries, given slots in order (localcluster)
		if lo, hi := i*16384/3, (i+1)*16384/3-1; slot >= lo && slot <= hi {
			primary = n
		}
	}
	if primary == nil {
		t.Fatal("no primary owns the channel's slot")
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.lost:
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription was not reported lost 30 s after its primary died")
	}
}
