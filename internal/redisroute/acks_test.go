package redisroute

import (
	"testing"
	"time"
)

// A WAIT asks for every replica of the primary's shard that is in step,
// at least the acks asked: not one ejected, behind or skipped after a
// short WAIT; a skipped one counts again once a replication check asked
// after the skip finds it in step.
func TestAWaitAsksForEveryReplicaInStep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(a, b *node)
		acks      int
		want      int
		wantCount int
	}{
		{"both in step", func(a, b *node) {}, 1, 2, 2},
		{"one behind", func(a, b *node) { a.behind.Store(true) }, 1, 1, 1},
		{"one ejected", func(a, b *node) { b.ejected.Store(true) }, 1, 1, 1},
		{"one skipped after a short WAIT", func(a, b *node) { a.ackSkippedAt.Store(1) }, 1, 1, 1},
		{"none in step: the acks asked", func(a, b *node) { a.behind.Store(true); b.ejected.Store(true) }, 1, 1, 0},
		{"more asked than are in step", func(a, b *node) { a.behind.Store(true) }, 2, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
			s := c.r.topo.Load().shards[0]
			for _, x := range s.replicas {
				x.behind.Store(false) // judged in step
			}
			tc.setup(s.replicas[0], s.replicas[1])
			want, inStep := c.r.ackTarget(s.primary, tc.acks)
			if want != tc.want || len(inStep) != tc.wantCount {
				t.Errorf("ackTarget = %d over %d replicas, want %d over %d", want, len(inStep), tc.want, tc.wantCount)
			}
			if want, inStep := c.r.ackTarget(s.replicas[0], tc.acks); want != tc.acks || inStep != nil {
				t.Errorf("ackTarget of a replica = %d over %v, want the acks asked, %d, and no replica", want, inStep, tc.acks)
			}
		})
	}

	t.Run("a skipped replica counts again once judged in step", func(t *testing.T) {
		c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
		a := c.r.topo.Load().shards[0].replicas[0]
		skipped := c.clock.Now()
		a.ackSkippedAt.Store(skipped.UnixNano())
		inStep := verdict{known: true, reason: replicaCaughtUp, listed: true}
		c.r.judged(a, inStep, skipped.Add(-time.Millisecond)) // asked before the skip
		if a.ackSkippedAt.Load() == 0 {
			t.Fatal("a check asked before the skip lifted it")
		}
		c.r.judged(a, verdict{known: true, behind: true, reason: behindLinkDown}, skipped.Add(time.Millisecond))
		if a.ackSkippedAt.Load() == 0 {
			t.Fatal("a check that found it behind lifted the skip")
		}
		c.r.judged(a, inStep, skipped.Add(time.Millisecond))
		if a.ackSkippedAt.Load() != 0 {
			t.Fatal("a check asked after the skip found it in step, and it is still skipped")
		}
	})
}
