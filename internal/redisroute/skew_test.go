package redisroute_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Every node's clock is read and exported, and a key's offset is its
// primary's, never later than the node's clock can be. On one machine the
// clocks are one clock, so each reading is 0 within its uncertainty: what
// this shows is that the reading brackets the truth, whatever the
// machine's load. (A node with another clock is pinned with a scripted
// TIME in TestANodesClockIsReadFromItsTightestRoundTrip: Debian's
// redis-server, built with jemalloc, cannot run under libfaketime.)
func TestEveryNodesClockIsReadAndBracketsTheTruth(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 2, 1 })
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg, func(cfg *redisroute.Config) { cfg.MemoryCheckInterval = 50 * time.Millisecond })
	ctx := ctxFor(t, 30*time.Second)

	known, unknown := r.Clocks(ctx)
	if len(known) != 4 || len(unknown) != 0 {
		t.Fatalf("clocks of a 2 × 1 cluster: %+v, not answered: %v", known, unknown)
	}
	for _, k := range known {
		if k.Offset > k.Uncertainty+time.Millisecond || k.Offset < -k.Uncertainty-time.Millisecond {
			t.Errorf("%s: offset %v ± %v, but the node shares this process's clock", k.Addr, k.Offset, k.Uncertainty)
		}
		if k.Skewed(redisroute.ClockSkewWarn) {
			t.Errorf("%s: %+v reads as skewed", k.Addr, k)
		}
		waitMetric(t, reg, "apollo_redis_node_clock_offset_seconds", k.Addr, func(v float64) bool { return true })
	}
	// The background readings reach every key's primary: a key's offset
	// is its primary's earliest, which on a shared clock is below 0 (TIME
	// was read before the reply arrived) by at most a round trip, and a
	// round trip of the check is bounded at 1 s.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 100; {
		key := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		off := r.ClockOffset(key)
		if off == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // not read yet
			continue
		}
		if off >= 0 || off < -time.Second {
			t.Errorf("ClockOffset(%q) = %v, want the earliest offset of a clock shared with this process: in [-1s, 0)", key, off)
		}
		i++
	}
}

// An instance whose own clock is off keeps the cluster's time: Now is its
// clock moved by the median of the nodes' offsets, read before New
// returns, so instances agree on booking deadlines and reservation ends
// whatever their hosts' clocks say. The nodes here share the machine's
// clock (the truth) and each router is given one 3 s behind or ahead.
// Only precise readings count (uncertain by at most 100 ms), so that
// bounds how far Now can be from the truth. Deadlines sent
// to Redis are not moved by the instance's skew: contexts' deadlines are
// on the machine's clock, and the node's offset from it is still about 0.
func TestAnInstanceWhoseClockIsOffKeepsTheClustersTime(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 2, 1 })
	const bound = 100 * time.Millisecond // maxClockUncertainty
	for _, skew := range []time.Duration{-3 * time.Second, 3 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			r := newRouterOn(t, c, reg, func(cfg *redisroute.Config) {
				cfg.Wall = func() time.Time { return time.Now().Add(skew) }
			})
			before := time.Now()
			now := r.Now()
			after := time.Now()
			if now.Before(before.Add(-bound)) || now.After(after.Add(bound)) {
				t.Errorf("Now = %v on a clock %v off, want the cluster's time, within %v of [%v, %v]", now, skew, bound, before, after)
			}
			if off := r.ClusterOffset(); off < -skew-bound || off > -skew+bound {
				t.Errorf("ClusterOffset = %v, want %v ± %v", off, -skew, bound)
			}
			if ahead := r.NowAhead(); ahead < -bound || ahead > bound {
				t.Errorf("NowAhead = %v, want 0 ± %v: Now is the machine's clock, the one contexts run on", ahead, bound)
			}
			waitMetric(t, reg, "apollo_cluster_clock_offset_seconds", "", func(v float64) bool {
				return v > (-skew-bound).Seconds() && v < (-skew+bound).Seconds()
			})
			if off := r.ClockOffset("k"); off > 0 || off < -time.Second {
				t.Errorf("ClockOffset = %v, want the node's earliest offset from the machine's clock: in [-1s, 0]", off)
			}
		})
	}
}

// A step of the host's clock (an NTP step, a VM resumed elsewhere, a date
// -s) moves neither the cluster's time nor the deadlines sent to Redis:
// the router keeps time on the clock the host had at its start, moved on
// monotonically, and reads the nodes against that. Here the router's host
// clock (Config.Wall) steps 10 s ahead between two checks; the nodes share
// the machine's clock, which did not step. Until 2026-12-04 Now followed
// the step until the next check (up to 5 s later), and so did every
// deadline sent: beyond G2's 1 s margin between an instance recording an
// allocation and another sweeping it.
func TestAStepOfTheHostsClockMovesNeitherTheClustersTimeNorDeadlines(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 2, 1 })
	const bound = 100 * time.Millisecond // maxClockUncertainty
	var step atomic.Int64
	r := newRouter(t, c, func(cfg *redisroute.Config) {
		cfg.Wall = func() time.Time { return time.Now().Add(time.Duration(step.Load())) }
		cfg.MemoryCheckInterval = time.Hour // no check between the step and the reads below
	})
	truth := func(what string) {
		t.Helper()
		before := time.Now()
		now := r.Now()
		after := time.Now()
		if now.Before(before.Add(-bound)) || now.After(after.Add(bound)) {
			t.Errorf("%s: Now is %v from the cluster's time, want within %v", what, now.Sub(before), bound)
		}
		if off := r.ClockOffset("k"); off > 0 || off < -time.Second {
			t.Errorf("%s: ClockOffset = %v, want the node's earliest offset from the machine's clock, in [-1s, 0]", what, off)
		}
		if ahead := r.NowAhead(); ahead < -bound || ahead > bound {
			t.Errorf("%s: NowAhead = %v, want 0 ± %v", what, ahead, bound)
		}
	}
	truth("before the step")
	step.Store(int64(10 * time.Second))
	truth("after the host's clock stepped 10 s ahead")
	if off := r.ClusterOffset(); off < -10*time.Second-bound || off > -10*time.Second+bound {
		t.Errorf("ClusterOffset = %v, want -10s ± %v: the host's clock is now 10 s ahead of the cluster's", off, bound)
	}
}
