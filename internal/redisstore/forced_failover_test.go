package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A forced failover (CLUSTER FAILOVER FORCE: the replica takes over at
// once, with whatever it has received) of a replica whose replication is
// held back (a firewall rule), so that it lacks a create the shard's other
// replica acknowledged. WAIT counts replicas; it cannot choose which.
//
// While the router's replication check still finds the lagging replica in
// step, a create it lags is not reported created, with one ack as with two:
// the write's proof waits for every replica in step (redisroute/proof.go).
// Once the check holds it behind (its last acknowledgement older than
// MaxReplicaLag), writes stop waiting for it, so that one lagging replica
// does not stop a shard's writes; forced over then, it loses what it
// lacked, a create reported created with one ack: the limit the README
// states (Known limits), pinned here so that it says what happens. With
// two acks nothing is reported created while it lags.
func TestAForcedFailoverOfAReplicaHeldBehindLosesWhatItLacked(t *testing.T) {
	clustertest.NeedFirewall(t)
	for _, acks := range []int{1, 2} {
		t.Run(fmt.Sprintf("acks %d of 2 replicas", acks), func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas, cfg.OwnAddrs = 1, 2, true })
			r := newRouterFor(t, c)
			s := redisstore.NewBookings(r, acks, partitions(t, 8))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			awaitReplicasInStep(ctx, t, r)
			primary, lagging := c.Primary(ctx, 0), c.Replicas(ctx, 0)[0]
			resume, err := c.StallReplication(ctx, primary, lagging)
			defer func() { _ = resume(context.Background()) }()
			if err != nil {
				t.Fatal(err)
			}

			if _, created, err := s.Create(ctx, searchingBooking("bk-lagged")); created || err == nil {
				t.Fatalf("create while a replica in step lags it, %d acks = %v, %v; want it not reported created", acks, created, err)
			}
			for !heldBehind(r, lagging.Addr) {
				if ctx.Err() != nil {
					t.Fatal("the router's replication check never held the lagging replica behind")
				}
				time.Sleep(50 * time.Millisecond)
			}
			b := searchingBooking("bk-forced")
			_, created, err := s.Create(ctx, b)
			if acks == 2 {
				if created || err == nil {
					t.Fatalf("create with one of two replicas held behind, 2 acks = %v, %v; want it not reported created", created, err)
				}
				return
			}
			if !created || err != nil {
				t.Fatalf("create with one of two replicas held behind, 1 ack = %v, %v; want it created", created, err)
			}

			if err := c.Failover(ctx, lagging, true); err != nil {
				t.Fatal(err)
			}
			if err := resume(ctx); err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(c.WaitRole(ctx, primary, "replica"), c.WaitHealthy(ctx)); err != nil {
				t.Fatal(err)
			}
			for {
				_, err = s.Get(ctx, b.ID)
				if err == nil || errors.Is(err, booking.ErrNotFound) || ctx.Err() != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !errors.Is(err, booking.ErrNotFound) {
				t.Fatalf("read after the forced failover = %v; want the create lost, as the README says (if it is kept now, say so there)", err)
			}
		})
	}
}

// heldBehind reports whether the router's replication check holds the
// replica at addr behind its primary.
func heldBehind(r *redisroute.Router, addr string) bool {
	for _, n := range r.Nodes() {
		if n.Addr == addr && n.Behind && !n.ReplicationAt.IsZero() {
			return true
		}
	}
	return false
}

// The other way a forced failover drops acknowledged writes, and the
// common one: the old primary goes on taking writes until it learns it was
// replaced (10 to 45 ms after the promotion, here), and its other replica,
// still attached to it, acknowledges them; then both copy the new primary.
// Creates run from four callers across a forced failover. None reported
// created may be lost, with one ack of two replicas as with two: a WAIT
// that met its count is done only once every replica is shown to hold the
// write or to be its primary's replica still (redisroute/proof.go). Before
// that, one ack lost 197-349 of 3,000-5,200 (349 of 5,159 in the last run).
func TestNoCreateReportedCreatedIsLostInAForcedFailover(t *testing.T) {
	for _, acks := range []int{1, 2} {
		t.Run(fmt.Sprintf("acks %d of 2 replicas", acks), func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 2 })
			r := newRouterFor(t, c)
			s := redisstore.NewBookings(r, acks, partitions(t, 8))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			awaitReplicasInStep(ctx, t, r)
			primary, forced := c.Primary(ctx, 0), c.Replicas(ctx, 0)[0]

			stop := make(chan struct{})
			created := make(chan string, 1<<16)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						b := searchingBooking(fmt.Sprintf("bk-forced-%d-%d", g, i))
						if _, ok, err := s.Create(ctx, b); ok && err == nil {
							created <- b.ID
						}
					}
				})
			}
			time.Sleep(300 * time.Millisecond)
			if err := c.Failover(ctx, forced, true); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			close(created)
			if err := errors.Join(c.WaitRole(ctx, primary, "replica"), c.WaitHealthy(ctx)); err != nil {
				t.Fatal(err)
			}

			var ids, lost []string
			for id := range created {
				ids = append(ids, id)
				for {
					_, err := s.Get(ctx, id)
					if errors.Is(err, booking.ErrNotFound) {
						lost = append(lost, id)
					}
					if err == nil || errors.Is(err, booking.ErrNotFound) {
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("read %s: %v", id, err)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			t.Logf("%d acks: %d creates reported created across a forced failover, %d of them lost", acks, len(ids), len(lost))
			if len(ids) == 0 {
				t.Fatal("no create was reported created: the test shows nothing")
			}
			if len(lost) > 0 {
				t.Errorf("%d of %d creates reported created were lost, e.g. %s", len(lost), len(ids), lost[0])
			}
		})
	}
}

// A forced failover must not be bought with the writes of a shard whose
// replica fails: with one ack of two, a create goes on on the other's
// acknowledgement, whether the failed replica is killed or hung. Whatever
// makes WAITs ask more of the replicas (README, Known limits) must keep
// this.
func TestCreatesGoOnWhenOneOfTwoReplicasFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(*localcluster.Node) error
	}{
		{"killed", (*localcluster.Node).Kill},
		{"hung", (*localcluster.Node).Pause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 2 })
			r := newRouterFor(t, c)
			s := redisstore.NewBookings(r, 1, partitions(t, 8))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			awaitReplicasInStep(ctx, t, r)
			failed := c.Replicas(ctx, 0)[0]
			if err := tc.fail(failed); err != nil {
				t.Fatal(err)
			}
			defer failed.Resume()
			for i := range 20 {
				if _, created, err := s.Create(ctx, searchingBooking(fmt.Sprintf("bk-after-%d", i))); !created || err != nil {
					t.Fatalf("create %d after a replica was %s = %v, %v; want it created on the other's acknowledgement", i, tc.name, created, err)
				}
			}
		})
	}
}
