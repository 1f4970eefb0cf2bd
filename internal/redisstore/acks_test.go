package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/booking"
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

// A primary cut off from its replicas while Apollo still reaches it (the
// minority side of a partition, about to be replaced): a booking update
// it takes is not done, and a read of the booking does not return it —
// a write that the failover will undo, or a booking the other side may
// already have changed.
func TestAPrimaryCutOffFromItsReplicaNeitherConfirmsAnUpdateNorAnswersAReadOfIt(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas, cfg.OwnAddrs = 1, 1, true })
	s := redisstore.NewBookings(newRouterFor(t, c), 1, partitions(t, 8))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, created, err := s.Create(ctx, searchingBooking("bk-cut-off"))
	if err != nil || !created {
		t.Fatalf("create = %v, %v", created, err)
	}
	primary := c.Primary(ctx, 0)
	if err := c.Isolate(ctx, primary); err != nil {
		t.Fatal(err)
	}
	defer c.Rejoin(context.Background(), primary)

	next := b
	next.Status, next.UpdatedAt = booking.Cancelled, t0.Add(time.Second)
	if err := s.Update(ctx, b, next); !errors.Is(err, booking.ErrUnconfirmed) {
		t.Fatalf("update on the cut-off primary = %v, want booking.ErrUnconfirmed", err)
	}
	if got, err := s.Get(ctx, b.ID); !errors.Is(err, redisstore.ErrUnavailable) || !errors.Is(err, redisroute.ErrReadUnconfirmed) {
		t.Fatalf("read on the cut-off primary = %s v%d, %v; want it unconfirmed", got.Status, got.Version, err)
	}
}

// A driver read sent to a primary (the primary policy, or any read while
// slots migrate) right after the primary was cut off from its replica,
// before the replica's lag says so: the transition it just took, which no
// replica acknowledged and a failover will undo, must not be read back as
// the driver's state. The write's own unconfirmed WAIT is the first sign.
func TestAReadOfAPrimaryJustLeftUnacknowledgedDoesNotShowWhatItTook(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas, cfg.OwnAddrs = 1, 1, true })
	s, ctx := primaryReadDrivers(t, c)
	primary := c.Primary(ctx, 0)
	if err := c.Isolate(ctx, primary); err != nil {
		t.Fatal(err)
	}
	defer c.Rejoin(context.Background(), primary)

	_, err := s.Apply(ctx, "d1", driver.Transition{Event: driver.EventReserve, BookingID: "bk-1", Until: t0.Add(time.Minute)}, t0)
	if !errors.Is(err, redisroute.ErrUnconfirmed) {
		t.Fatalf("reserve on the cut-off primary = %v, want ErrUnconfirmed", err)
	}
	if got, err := s.Get(ctx, "d1"); err == nil && got.Status == driver.StatusReserved {
		t.Fatalf("read on the cut-off primary = %s for %s v%d: a transition no replica acknowledged, read back", got.Status, got.BookingID, got.Version)
	} else if err != nil && !errors.Is(err, redisroute.ErrReadUnconfirmed) {
		t.Fatalf("read on the cut-off primary: %v, want the driver as the replica has it or ErrReadUnconfirmed", err)
	}
}

// The other side of the same sign: a write no replica acknowledged
// because the shard's only replica is dead is no cut-off primary, and
// reads of the primary go on, plain, once nothing answers for the replica
// (a confirmation could only fail).
func TestReadsOfAPrimaryWhoseOnlyReplicaDiedGoOn(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	s, ctx := primaryReadDrivers(t, c)
	if err := c.Replicas(ctx, 0)[0].Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(ctx, "d1", driver.Transition{Event: driver.EventReserve, BookingID: "bk-1", Until: t0.Add(time.Minute)}, t0)
	if !errors.Is(err, redisroute.ErrUnconfirmed) {
		t.Fatalf("reserve with the only replica dead = %v, want ErrUnconfirmed", err)
	}
	for {
		got, err := s.Get(ctx, "d1")
		if err == nil {
			if got.Status != driver.StatusReserved {
				t.Fatalf("read = %s, want the reservation the primary holds", got.Status)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("reads of the primary never went on after its only replica died: %v", err)
		}
	}
}

// primaryReadDrivers is a driver store whose reads all go to primaries and
// whose transitions need a replica's acknowledgement, with driver d1 on
// line, once the router's replication check has a finding on every
// replica: whether a replica is alive is then the router's to know. The
// lag check is out of play (an hour): only what writes show counts.
func primaryReadDrivers(t *testing.T, c *localcluster.Cluster) (*redisstore.Drivers, context.Context) {
	t.Helper()
	r := newRouterFor(t, c, func(cfg *redisroute.Config) {
		cfg.Policy, cfg.MaxReplicaLag = redisroute.Primary, time.Hour
	})
	cfg := redisstore.DefaultConfig()
	cfg.Acks = 1
	s, err := redisstore.NewDrivers(r, cfg, driver.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	online(t, s, "d1", 1.30, 103.80, t0, "car")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	awaitReplicasInStep(ctx, t, r)
	return s, ctx
}

// awaitReplicasInStep waits until the router's replication check has
// judged every replica in step. A replica not yet judged since it joined
// has a finding too, held behind: a finding alone is not enough.
func awaitReplicasInStep(ctx context.Context, t *testing.T, r *redisroute.Router) {
	t.Helper()
	inStep := func() bool {
		for _, n := range r.Nodes() {
			if n.Role != "primary" && (n.Behind || n.ReplicationAt.IsZero()) {
				return false
			}
		}
		return true
	}
	for !inStep() {
		if ctx.Err() != nil {
			t.Fatal("the router's replication check never found the replicas in step")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// searchingBooking is a new booking, searching, due in a minute.
func searchingBooking(id string) booking.Booking {
	return booking.Booking{ID: id, RiderID: "r1", Service: "car", Status: booking.Searching,
		CreatedAt: t0, UpdatedAt: t0, Deadline: t0.Add(time.Minute), DueAt: t0.Add(time.Minute)}
}

// A retried create that finds its booking wrote nothing, so the WAIT after
// it confirms nothing: it must neither return the booking unconfirmed nor
// report booking.ErrUnconfirmed, on which the pipeline withdraws (deletes)
// what it takes for its own new write — here a booking the rider was
// already told was created. The booking's shard has its replica paused;
// its index partition, on another shard, does not.
func TestARetriedCreateNeverWithdrawsNorReturnsAnUnconfirmedBooking(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ps := partitions(t, 8)
	s := redisstore.NewBookings(newRouterFor(t, c), 1, ps)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, replica := bookingApartFromItsIndex(ctx, t, c, ps, "bk-retried")
	if _, created, err := s.Create(ctx, b); err != nil || !created {
		t.Fatalf("create = %v, %v", created, err)
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	got, created, err := s.Create(ctx, b)
	t.Logf("retry with the booking's replica paused: %s, %v, %v", got.ID, created, err)
	if err == nil || created || errors.Is(err, booking.ErrUnconfirmed) {
		t.Errorf("retry with the replica paused = %+v, %v, %v; want an error that is not booking.ErrUnconfirmed (which withdraws)", got, created, err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	got, created, err = s.Create(ctx, b)
	if err != nil || created || got.ID != b.ID || got.Version != 1 {
		t.Errorf("retry with the replica back = %+v, %v, %v; want the stored booking", got, created, err)
	}
}

// owns says whether addr is the primary of slot in a CLUSTER SLOTS reply.
func owns(slots []redis.ClusterSlot, addr string, slot int) bool {
	for _, r := range slots {
		if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr == addr
		}
	}
	return false
}

// bookingApartFromItsIndex is a new booking (its ID begins with prefix)
// whose key and open-index partition live on different shards, so that
// pausing the replica of the booking's shard (returned) leaves the index
// write acknowledged and fails the booking's own.
func bookingApartFromItsIndex(ctx context.Context, t *testing.T, c *localcluster.Cluster, ps redisstore.Partitions, prefix string) (booking.Booking, *localcluster.Node) {
	t.Helper()
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if shard := shardOfKey(ctx, t, c, "apollo:bk:{"+id+"}"); shard != shardOfKey(ctx, t, c, ps.OpenKey(ps.Of(id))) {
			return searchingBooking(id), c.Replicas(ctx, shard)[0]
		}
	}
}

// shardOfKey is the shard whose primary serves key.
func shardOfKey(ctx context.Context, t *testing.T, c *localcluster.Cluster, key string) int {
	t.Helper()
	cl := c.Primary(ctx, 0).Client()
	slots, err := cl.ClusterSlots(ctx).Result()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Config().Primaries {
		if owns(slots, c.Primary(ctx, i).Addr, redisroute.Slot(key)) {
			return i
		}
	}
	t.Fatalf("no shard owns %s", key)
	return -1
}

// openDue is the score of id's entry in the open index (0: none), read on
// its primary.
func openDue(ctx context.Context, t *testing.T, c *localcluster.Cluster, ps redisstore.Partitions, id string) float64 {
	t.Helper()
	key := ps.OpenKey(ps.Of(id))
	cl := c.Primary(ctx, shardOfKey(ctx, t, c, key)).Client()
	defer cl.Close()
	due, err := cl.ZScore(ctx, key, id).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return due
}

// A create whose write no replica acknowledged is withdrawn by its own
// request, after it answered. Meanwhile a retry with the same key may have
// found the booking and reported it to the rider, or, on a primary promoted
// without it, created it anew and answered 201. The withdrawal, coming
// after, must delete only what its own attempt stored and nobody reported
// (G3). The requests' steps are taken here in that order.
func TestALateWithdrawalDeletesOnlyItsOwnAttemptsUnreportedBooking(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ps := partitions(t, 8)
	s := redisstore.NewBookings(newRouterFor(t, c), 1, ps)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i, tc := range []struct {
		name string
		// retry is what happens between the first attempt's answer and
		// its withdrawal; it returns the booking the rider was told of
		// (zero: none).
		retry func(t *testing.T, first booking.Booking) booking.Booking
		// moved, when set, is a new due time a claim gave the booking's
		// index entry before the withdrawal: the entry must keep it.
		moved time.Time
	}{
		{"nobody retried", func(*testing.T, booking.Booking) booking.Booking { return booking.Booking{} }, time.Time{}},
		{"nobody retried, a claim moved its entry", func(*testing.T, booking.Booking) booking.Booking { return booking.Booking{} }, t0.Add(time.Hour)},
		{"a retry found it (the create's own path)", func(t *testing.T, first booking.Booking) booking.Booking {
			return eventually(ctx, t, func() (booking.Booking, error) {
				got, created, err := s.Create(ctx, first)
				if err == nil && created {
					t.Fatalf("the retry created %s again", first.ID)
				}
				return got, err
			})
		}, time.Time{}},
		{"a retry found it (the lookup before a create)", func(t *testing.T, first booking.Booking) booking.Booking {
			return eventually(ctx, t, func() (booking.Booking, error) { return s.Keep(ctx, first.ID) })
		}, time.Time{}},
		{"a retry created it anew on a primary promoted without it", func(t *testing.T, first booking.Booking) booking.Booking {
			cl := c.Primary(ctx, shardOfKey(ctx, t, c, "apollo:bk:{"+first.ID+"}")).Client()
			defer cl.Close()
			if err := cl.Del(ctx, "apollo:bk:{"+first.ID+"}").Err(); err != nil { // as the failover lost it
				t.Fatal(err)
			}
			again := first
			again.CreatedAt, again.DueAt = first.CreatedAt.Add(time.Second), first.DueAt.Add(time.Second)
			return eventually(ctx, t, func() (booking.Booking, error) {
				got, created, err := s.Create(ctx, again)
				if err == nil && !created {
					t.Fatalf("the retry found %+v, want it created anew", got)
				}
				return got, err
			})
		}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, replica := bookingApartFromItsIndex(ctx, t, c, ps, fmt.Sprintf("bk-late-%d", i))
			if err := replica.Pause(); err != nil {
				t.Fatal(err)
			}
			defer replica.Resume()
			if _, _, err := s.Create(ctx, first); !errors.Is(err, booking.ErrUnconfirmed) {
				t.Fatalf("create with the replica paused = %v, want booking.ErrUnconfirmed", err)
			}
			if err := replica.Resume(); err != nil {
				t.Fatal(err)
			}
			told := tc.retry(t, first)
			if !tc.moved.IsZero() {
				key := ps.OpenKey(ps.Of(first.ID))
				cl := c.Primary(ctx, shardOfKey(ctx, t, c, key)).Client()
				err := cl.ZAddXX(ctx, key, redis.Z{Score: float64(tc.moved.UnixMilli()), Member: first.ID}).Err()
				cl.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Withdraw(ctx, first); err != nil {
				t.Fatalf("withdraw = %v", err)
			}
			got, err := s.Get(ctx, first.ID)
			due := openDue(ctx, t, c, ps, first.ID)
			switch {
			case told.ID == "" && !errors.Is(err, booking.ErrNotFound):
				t.Fatalf("nobody was told of it, yet after its withdrawal get = %+v, %v; want it gone", got, err)
			case told.ID == "" && tc.moved.IsZero() && int64(due) != first.DueAt.UnixMilli():
				// Left for a scan to forget: it may be a concurrent retry's
				// too (TestAWithdrawalLeavesTheIndexEntryARetryWrote).
				t.Fatalf("withdrawn, its index entry is due %v; want it left as it was, %d", due, first.DueAt.UnixMilli())
			case !tc.moved.IsZero() && int64(due) != tc.moved.UnixMilli():
				t.Fatalf("a claim moved its index entry to %d, and the withdrawal left it at %v; want it kept", tc.moved.UnixMilli(), due)
			case told.ID != "" && (err != nil || !got.CreatedAt.Equal(told.CreatedAt)):
				t.Fatalf("after the late withdrawal, get = %+v, %v; want the booking the rider was told of, created at %v", got, err, told.CreatedAt)
			case told.ID != "" && int64(due) != told.DueAt.UnixMilli():
				t.Fatalf("after the late withdrawal, its index entry is due %v, want %d", due, told.DueAt.UnixMilli())
			}
		})
	}
}

// eventually retries do until it succeeds (a replica just resumed may
// not have caught up with the first write yet) or ctx ends.
func eventually(ctx context.Context, t *testing.T, do func() (booking.Booking, error)) booking.Booking {
	t.Helper()
	for {
		b, err := do()
		if err == nil {
			return b
		}
		if ctx.Err() != nil {
			t.Fatalf("never succeeded: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
