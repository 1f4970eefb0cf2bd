package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ReachReport is how much of the cluster one instance reached: the slots
// whose primary answered a probe begun At, counted until Until (both on
// the cluster's time, which every instance keeps).
type ReachReport struct {
	ID    string
	Slots int
	At    time.Time
	Until time.Time
}

// ReachStore shares the instances' reports.
type ReachStore interface {
	// ReportReach records r where every instance can read it (on every
	// shard it reaches), and forgets reports that ran out.
	ReportReach(ctx context.Context, r ReachReport) error
	// Reaches returns each instance's latest report still counting at now.
	Reaches(ctx context.Context, now time.Time) ([]ReachReport, error)
}

// ReachProber measures this instance's reach: the slots served by a
// primary that answers it, of the slots the cluster covers.
type ReachProber interface {
	ReachPrimaries(ctx context.Context) (reached, covered int, err error)
}

// Reach tells a path of this instance's own that is cut (a route, a
// firewall rule, one host's network) from a primary that is down: the
// first leaves the other instances reaching what this one does not, the
// second leaves them all alike. An instance that another reaches more than
// is Behind, and its readiness says so, so that the load balancer sends
// its requests to instances that can serve them. The instances that reach
// the most are never behind, so the fleet is never taken out whole.
type Reach struct {
	id     string
	store  ReachStore
	prober ReachProber
	now    func() time.Time // the cluster's time
	every  time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	mine   ReachReport
	since  time.Time    // when the probe that found mine fallen ended
	ahead  *ReachReport // another instance's report that outreached mine
	probed bool
}

// NewReach returns the reach of instance id, measured every `every` on
// the cluster's time now.
func NewReach(id string, s ReachStore, p ReachProber, now func() time.Time, every time.Duration, log *slog.Logger) *Reach {
	return &Reach{id: id, store: s, prober: p, now: now, every: every, log: log}
}

// reportLife is how many rounds a report counts for: a missed round or
// two is not an instance gone.
const reportLife = 3

// Run measures, reports and compares every `every` until stop is closed.
func (r *Reach) Run(stop <-chan struct{}) {
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), r.every)
		r.Round(ctx)
		cancel()
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// Round measures this instance's reach, reports it, and compares it with
// the others' reports.
func (r *Reach) Round(ctx context.Context) {
	at := r.now()
	// Half the round for the probe: a primary that does not answer takes
	// all it is given, and the report and the reading need the rest.
	pctx, cancel := context.WithTimeout(ctx, r.every/2)
	reached, _, err := r.prober.ReachPrimaries(pctx)
	cancel()
	ended := r.now()
	mine := ReachReport{ID: r.id, Slots: reached, At: at, Until: at.Add(reportLife * r.every)}
	if err := r.store.ReportReach(ctx, mine); err != nil {
		r.log.Debug("report this instance's reach", "err", err)
	}
	others, rerr := r.store.Reaches(ctx, r.now())
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probed && mine.Slots < r.mine.Slots {
		// Whatever cut it happened before this probe ended.
		r.since = ended
	}
	r.mine, r.probed = mine, true
	if rerr != nil {
		// Nothing to compare with: keep the judgement of the round
		// before, which expires with the report it rests on.
		if r.ahead != nil && !r.ahead.Until.After(r.now()) {
			r.setAhead(nil, err)
		}
		return
	}
	r.setAhead(outreached(mine, r.since, others, r.now()), err)
}

// setAhead records the report that outreached this instance's, logging a
// change. Under mu.
func (r *Reach) setAhead(ahead *ReachReport, probeErr error) {
	switch {
	case ahead != nil && r.ahead == nil:
		r.log.Warn("another instance reaches primaries this one does not: not ready until it does",
			"slots_reached", r.mine.Slots, "other", ahead.ID, "other_slots_reached", ahead.Slots, "err", probeErr)
	case ahead == nil && r.ahead != nil:
		r.log.Info("this instance reaches as much of the cluster as any other again", "slots_reached", r.mine.Slots)
	}
	r.ahead = ahead
}

// outreached returns the report of another instance that reached more
// slots than mine in a probe begun at or after from, still counting at
// now: the one that reached most, or nil. Reports from before from are
// left out: they may predate the failure that cut this instance's reach,
// which a probe begun after it would have met too.
func outreached(mine ReachReport, from time.Time, others []ReachReport, now time.Time) *ReachReport {
	var best *ReachReport
	for i, o := range others {
		if o.ID == mine.ID || !o.Until.After(now) || o.At.Before(from) || o.Slots <= mine.Slots {
			continue
		}
		if best == nil || o.Slots > best.Slots {
			best = &others[i]
		}
	}
	return best
}

// Slots is how many slots' primaries answered this instance's last probe.
func (r *Reach) Slots() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mine.Slots
}

// Behind is nil unless another instance reaches primaries this one does
// not: then an error saying which, and how much each reaches.
func (r *Reach) Behind() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ahead == nil || !r.ahead.Until.After(r.now()) {
		return nil
	}
	return fmt.Errorf("this instance reaches the primaries of %d slots, and instance %s reaches %d: its path to the others is cut",
		r.mine.Slots, r.ahead.ID, r.ahead.Slots)
}
