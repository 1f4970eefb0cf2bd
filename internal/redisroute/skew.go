package redisroute

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// A guarded write carries its caller's deadline, and Redis compares it
// with its own clock (the store's LATE guard, G6). A node whose clock is
// behind this process's lets a write land after its caller was told it
// might not have, by as much as the difference; a node ahead by more than
// a request's deadline refuses every guarded write. Redis also expires
// keys by its own clock. So the router reads every node's clock (TIME) in
// the background, exports how far each is from this process's, and gives
// the store the offset of a key's primary (ClockOffset), so that deadlines
// are sent in the node's time.

// NodeClock is what TIME round trips say about a node's clock.
type NodeClock struct {
	Addr string `json:"addr"`
	// Offset is the node's clock minus the clock it was read against (the
	// router's steady clock; ReadClock's now), taken at the middle
	// of the round trip; the true offset lies within Offset ± Uncertainty
	// (half the round trip: TIME was read somewhere inside it).
	Offset      time.Duration `json:"offset_ns"`
	Uncertainty time.Duration `json:"uncertainty_ns"`
	// At is when it was read (the clock it was read against).
	At time.Time `json:"at"`
}

// Earliest is the smallest offset the node's clock can have: a deadline
// moved by it is never later, in the node's time, than the caller's.
func (c NodeClock) Earliest() time.Duration { return c.Offset - c.Uncertainty }

// Skewed reports whether the node's clock certainly differs from this
// process's by more than bound.
func (c NodeClock) Skewed(bound time.Duration) bool {
	return c.Offset-c.Uncertainty > bound || c.Offset+c.Uncertainty < -bound
}

// clockSamples is how many TIME round trips one reading takes; the
// shortest is kept, as NTP does, since it bounds the offset tightest.
const clockSamples = 3

// maxClockUncertainty: a reading whose best round trip took longer than
// twice this (a busy node or machine) does not replace the node's last
// one, unless the two cannot both be right (the clock stepped).
const maxClockUncertainty = 100 * time.Millisecond

// maxClockAge: a reading older than this (the node stopped answering
// TIME, or only slowly) is not used to move deadlines: a clock may have
// stepped since, and an unknown offset is taken as none.
const maxClockAge = 30 * time.Second

// clockCheckTimeout bounds one round of readings: a slower one is not
// precise enough to use anyway.
const clockCheckTimeout = time.Second

// ClockSkewWarn is the offset beyond which a node's clock is logged and
// flagged: deadlines are corrected for it, but keys still expire by the
// node's clock.
const ClockSkewWarn = 500 * time.Millisecond

// ReadClock measures the clock of c's node against now: clockSamples TIME
// round trips, the shortest kept.
func ReadClock(ctx context.Context, c *redis.Client, now func() time.Time) (NodeClock, error) {
	best := NodeClock{Uncertainty: -1}
	for range clockSamples {
		t0 := now()
		at, err := c.Time(ctx).Result()
		if err != nil {
			return NodeClock{}, err
		}
		t1 := now()
		half := t1.Sub(t0) / 2
		if best.Uncertainty < 0 || half < best.Uncertainty {
			// at carries no monotonic reading: this is wall clock against wall clock.
			best = NodeClock{Offset: at.Sub(t0.Add(half)), Uncertainty: half, At: t1}
		}
	}
	return best, nil
}

// replaces reports whether reading c replaces last: a precise one always; an
// imprecise one only when it contradicts last (their ranges do not meet:
// the clock stepped), since an imprecise range still holds the truth.
func (c NodeClock) replaces(last *NodeClock) bool {
	return c.Uncertainty <= maxClockUncertainty || last == nil ||
		c.Offset+c.Uncertainty < last.Offset-last.Uncertainty || c.Offset-c.Uncertainty > last.Offset+last.Uncertainty
}

// Clocks reads every node's clock now, each through its probe pool and
// bounded by ctx, against the router's steady clock (this process's wall
// clock as it was at the start, moved on monotonically: see steady). Nodes
// that do not answer are listed in unknown.
func (r *Router) Clocks(ctx context.Context) (known []NodeClock, unknown []string) {
	return askEveryNode(r.topo.Load(), func(n *node) (NodeClock, bool) {
		c, err := ReadClock(ctx, n.probe, r.steady.now)
		c.Addr = n.addr
		return c, err == nil
	})
}

// checkClocks reads every node's clock, keeps each reading that may move
// deadlines (see replaces), exports the offsets, logs a node whose clock
// becomes, or stops being, skewed, and sets the cluster's time (Now).
func (r *Router) checkClocks() {
	ctx, cancel := context.WithTimeout(context.Background(), clockCheckTimeout)
	defer cancel()
	known, _ := r.Clocks(ctx)
	in := r.topo.Load().byAddr()
	defer func() {
		_ = r.setClusterOffset(in)
		r.m.clusterOffset.Set(r.ClusterOffset().Seconds())
	}()
	// Exported and logged against the host's clock, which NTP keeps and
	// an operator compares: the steady clock drifts from it by any step.
	hostBehind := r.steady.now().Sub(r.wall())
	for _, c := range known {
		n := in[c.Addr]
		if n == nil || !c.replaces(n.clock.Load()) {
			continue
		}
		n.clock.Store(&c)
		host := c
		host.Offset += hostBehind
		r.m.clockOffset.WithLabelValues(c.Addr).Set(host.Offset.Seconds())
		switch was := n.skewed.Load(); {
		case host.Skewed(ClockSkewWarn) && !was:
			r.log.Error("redis node's clock differs from this instance's: write deadlines are moved by the difference, but the node expires keys by its clock; check NTP on both hosts",
				"node", c.Addr, "offset", host.Offset, "uncertainty", c.Uncertainty)
		case !host.Skewed(ClockSkewWarn) && was:
			r.log.Info("redis node's clock agrees with this instance's again", "node", c.Addr, "offset", host.Offset)
		}
		n.skewed.Store(host.Skewed(ClockSkewWarn))
	}
}

// ClockOffset is how far the clock of the primary serving key's slot may
// be ahead of the clock contexts' deadlines are on (time.Now), now, at the
// earliest (NodeClock.Earliest): time.Now moved by it is the node's clock.
// A deadline is sent for Redis to compare with its clock as that plus the
// time left until it (on the monotonic clock, so that a host clock step
// moves neither). While that node's clock has not been read, or not for
// maxClockAge, it is 0 (no move, as if the clocks agreed).
func (r *Router) ClockOffset(key string) time.Duration {
	s := r.topo.Load().slots[Slot(key)]
	if s == nil || s.primary == nil {
		return 0
	}
	if c := s.primary.clock.Load(); c != nil {
		if now := r.steady.now(); now.Sub(c.At) <= maxClockAge {
			return now.Add(c.Earliest()).Sub(time.Now())
		}
	}
	return 0
}

// wall is this process's clock (Config.Wall).
func (r *Router) wall() time.Time { return r.cfg.wall() }

// Now is the cluster's time: the router's steady clock (this process's
// clock as it was at the start, moved on monotonically, so that a step of
// the host's clock does not move it) moved by the median of the nodes'
// offsets from it (setClusterOffset), or the steady clock alone while that
// is not known (New tries for it before it returns). Instances that keep time by it agree
// with each other as closely as they read the nodes' clocks (half a round
// trip each), however far their own clocks are off, since they all read
// the same nodes; with fewer than half the nodes' clocks off, the median
// is on the others'. Booking deadlines, reservation ends, heartbeats and
// Spampede's buckets are compared across instances, so they are set by it.
func (r *Router) Now() time.Time {
	return r.steady.now().Add(time.Duration(r.clusterOffset.Load()))
}

// clockStartTries is how many clock checks New makes, at most, for the
// cluster's time to be known before the first booking is stamped with it.
const clockStartTries = 3

// readClusterTime checks the clocks until the cluster's time is known, at
// most clockStartTries times, and says when it is not.
func (r *Router) readClusterTime() {
	for range clockStartTries {
		r.checkClocks()
		if r.clusterKnown.Load() {
			return
		}
	}
	r.log.Warn("the cluster's time is not known: too few nodes answered TIME precisely; this instance keeps its host's clock until a majority does, and then steps to the cluster's",
		"tries", clockStartTries)
}

// ClusterOffset is how far Now is from this process's own clock
// (Config.Wall) now.
func (r *Router) ClusterOffset() time.Duration { return r.Now().Sub(r.wall()) }

// NowAhead is how far Now is ahead of time.Now, the clock contexts'
// deadlines are on, now: a time in the cluster's clock (a client's
// deadline) moved back by it is on time.Now. It is ClusterOffset, but for
// a test's or a drill's Config.Wall.
func (r *Router) NowAhead() time.Duration { return r.Now().Sub(time.Now()) }

// setClusterOffset takes the cluster's time from the nodes' precise
// readings (a round trip of at most 2 × maxClockUncertainty) not older
// than maxClockAge, and only from a majority of the nodes: their median,
// so a minority of nodes whose clocks are off does not move it. It is kept
// while a new median agrees with it within the readings' uncertainty, so
// that the time does not step back and forth by reading noise. Without a
// majority the last one stands: a clock drifts slowly, and a step back to
// this process's own would move the fleet's time by the whole skew.
// It reports whether the cluster's time is known.
func (r *Router) setClusterOffset(in map[string]*node) bool {
	var offs []time.Duration
	var unc time.Duration
	for _, n := range in {
		if c := n.clock.Load(); c != nil && c.Uncertainty <= maxClockUncertainty && r.steady.now().Sub(c.At) <= maxClockAge {
			offs = append(offs, c.Offset)
			unc = max(unc, c.Uncertainty)
		}
	}
	known := r.clusterKnown.Load()
	m, ok := median(offs)
	if !ok || 2*len(offs) <= len(in) {
		return known
	}
	if last := time.Duration(r.clusterOffset.Load()); known && m >= last-unc && m <= last+unc {
		return true
	}
	r.clusterOffset.Store(int64(m))
	r.clusterKnown.Store(true)
	if !known {
		r.log.Info("keeping the cluster's time: the median of the nodes' clocks", "offset_from_this_host", m, "nodes", len(offs))
	}
	return true
}

// median is the middle of offs (the mean of the two middle ones for an
// even count); false for none.
func median(offs []time.Duration) (time.Duration, bool) {
	if len(offs) == 0 {
		return 0, false
	}
	slices.Sort(offs)
	mid := len(offs) / 2
	if len(offs)%2 == 1 {
		return offs[mid], true
	}
	return offs[mid-1] + (offs[mid]-offs[mid-1])/2, true
}
