package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// ReachReport is how much of the cluster one instance reached: the slots
// whose primary answered a probe begun At, and those primaries' addresses,
// counted until Until (both on the cluster's time, which every instance
// keeps).
type ReachReport struct {
	ID        string
	Slots     SlotSet
	Primaries []string
	At        time.Time
	Until     time.Time
}

// ReachStore shares the instances' reports.
type ReachStore interface {
	// ReportReach records r where every instance can read it (on every
	// shard it reaches), and forgets reports that ran out.
	ReportReach(ctx context.Context, r ReachReport) error
	// Reaches returns each instance's latest report still counting at now.
	Reaches(ctx context.Context, now time.Time) ([]ReachReport, error)
	// ForgetReach withdraws id's reports.
	ForgetReach(ctx context.Context, id string) error
}

// ReachProber measures this instance's reach.
type ReachProber interface {
	// ReachPrimaries probes the primaries of this instance's view of the
	// cluster: the slot ranges served by one that answered, the addresses
	// of those that answered and of those that did not.
	ReachPrimaries(ctx context.Context) (ranges [][2]int, answered, unanswered []string, err error)
	// Unanswered probes those of addrs that are nodes of this instance's
	// view, and returns the ones that did not answer (another instance's
	// view may name a primary this one holds a replica, or does not know).
	Unanswered(ctx context.Context, addrs []string) []string
	// RequestRefresh asks, without waiting, for a new view of the cluster
	// (which node serves which slots), as after a failover it has not seen
	// yet.
	RequestRefresh()
}

// Reach tells a path of this instance's own that is cut (a route, a
// firewall rule, one host's network) from a primary that is down: the
// first leaves other instances reaching what this one does not, the
// second leaves them all alike. An instance is Behind while another one's
// recent report reached every slot it reached and more, through a primary
// this one does not reach when it asks it itself, so the load balancer
// sends its requests to instances that can serve them. (Asked itself: an
// instance whose view of the cluster is older than another's after a
// failover reaches the new primary all the same, and is not behind.) An
// instance whose reach no other report strictly contains is never behind:
// the fleet is not taken out whole by it.
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
	judged time.Time    // when ahead was last judged
	// dropped is when a judgement ended because the report ahead lost
	// what this instance lacked no more than it did (a primary down for
	// all), while this instance still lacked what it had: a judgement
	// made again soon after needs no new rounds (see judge).
	dropped time.Time
	rounds  int // rounds in a row that found one
	probed  bool
	// answered and asked count the primaries of this instance's view
	// that its last probe reached, and all it probed; the probe ended at
	// countedAt.
	answered, asked int
	countedAt       time.Time
	ask             []string // primaries of other views, for the next round
	// writing is held across the check of quiet and the write, so that
	// no report is written after Withdraw deleted them.
	writing sync.Mutex
	quiet   bool // reports no more (draining, stopped); under mu
}

// NewReach returns the reach of instance id, measured every `every` on
// the cluster's time now.
func NewReach(id string, s ReachStore, p ReachProber, now func() time.Time, every time.Duration, log *slog.Logger) *Reach {
	return &Reach{id: id, store: s, prober: p, now: now, every: every, log: log}
}

const (
	// reportLife is how many rounds a report is kept: a missed round is
	// not an instance gone.
	reportLife = 3
	// behindAfter is how many rounds in a row must find a report ahead
	// before this instance is behind. Each such round also renews its view
	// of the cluster: after a failover the instance that saw it first
	// reaches the new primary a round or two before the others (the nodes
	// asked may not all know of it yet), and they with it.
	behindAfter = 3
)

// recent reports whether a report begun at is recent enough to judge by at
// now: from another's last round or the one before (a report is written
// up to a round after its probe began, and read up to a round after
// that), so a dead or frozen instance's stops counting within two rounds
// and a half; and not from the future (a clock far ahead).
func (r *Reach) recent(at, now time.Time) bool {
	return !at.Before(now.Add(-r.every*5/2)) && !at.After(now.Add(r.every))
}

// Run measures, reports and compares every `every` until stop is closed.
func (r *Reach) Run(stop <-chan struct{}) {
	// A round in progress ends with stop, not a round later.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // owned by Run: ends when it returns
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	for {
		r.Round(ctx)
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// Round measures this instance's reach, reads the others' reports, and
// reports its own, each within its share of a round. The primaries that
// the last round's reports named and its view did not are asked with the
// view's own, within the same half round: a node asked first must often be
// dialled, and a tighter bound than the view's primaries get would find
// it missed where they are not. One named for the first time counts for
// nothing until it is asked, a round later.
func (r *Reach) Round(ctx context.Context) {
	at := r.now()
	ask := r.toAsk()
	pctx, cancel := context.WithTimeout(ctx, r.every/2)
	var unanswered []string
	var wg sync.WaitGroup
	if len(ask) > 0 {
		wg.Go(func() { unanswered = r.prober.Unanswered(pctx, ask) }) // owned by Round: waited for below
	}
	ranges, answered, missed, err := r.prober.ReachPrimaries(pctx)
	wg.Wait()
	cancel()
	ended := r.now()
	mine := ReachReport{ID: r.id, Slots: SlotSetOf(ranges), Primaries: answered, At: at, Until: at.Add(reportLife * r.every)}
	rctx, cancel := context.WithTimeout(ctx, r.every/4)
	others, rerr := r.store.Reaches(rctx, r.now())
	cancel()
	r.probedView(len(answered), len(answered)+len(missed), ended, unasked(mine, missed, others))
	r.report(ctx, mine)
	if refresh := r.judge(mine, append(missed, unanswered...), ended, others, rerr, err); refresh {
		r.prober.RequestRefresh()
	}
}

// unasked is the primaries that others' reports reaching more than mine
// name and this instance's probe did not ask: primaries of another view of
// the cluster than its own.
func unasked(mine ReachReport, missed []string, others []ReachReport) []string {
	asked := map[string]bool{}
	for _, a := range slices.Concat(mine.Primaries, missed) {
		asked[a] = true
	}
	var out []string
	for _, o := range others {
		if o.ID == mine.ID || !o.Slots.StrictlyContains(mine.Slots) {
			continue
		}
		for _, a := range o.Primaries {
			if !asked[a] {
				asked[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// report writes mine, unless this instance has gone quiet.
func (r *Reach) report(ctx context.Context, mine ReachReport) {
	r.writing.Lock()
	defer r.writing.Unlock()
	if r.isQuiet() {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, r.every/4)
	defer cancel()
	if err := r.store.ReportReach(wctx, mine); err != nil {
		r.log.Debug("report this instance's reach", "err", err)
	}
}

// judge compares mine with the others' reports (none read when rerr is
// set), given the primaries that did not answer this instance (missed),
// and reports whether the view of the cluster should be renewed.
func (r *Reach) judge(mine ReachReport, missed []string, ended time.Time, others []ReachReport, rerr, probeErr error) (refresh bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probed && !mine.Slots.Contains(r.mine.Slots) {
		// Whatever cut it happened before this probe ended.
		r.since = ended
	}
	r.mine, r.probed = mine, true
	now := r.now()
	if rerr != nil {
		// Nothing to compare with: the judgement of the round before
		// stands until its report is no longer recent, or mine has
		// caught up with it; one not made yet starts over.
		r.rounds = 0
		if r.ahead != nil && r.recent(r.ahead.At, now) && r.ahead.Slots.StrictlyContains(mine.Slots) {
			r.judged = now
		} else {
			r.setAhead(nil, probeErr)
		}
		return false
	}
	// Reports from before mine fell are left out of a new judgement, not
	// of one already made: a behind instance that loses more (a second
	// path, a primary down for all) is still behind those that reach it.
	through := func(o ReachReport) bool { // a primary this instance missed
		return slices.ContainsFunc(o.Primaries, func(p string) bool { return slices.Contains(missed, p) })
	}
	a, anyTime := r.outreached(mine, others, now, r.since, through), r.outreached(mine, others, now, time.Time{}, through)
	// A judgement ended by a fault all met, between this probe and the
	// other's, is made again at once: the instance was cut off before it.
	again := !r.dropped.IsZero() && !now.After(r.dropped.Add(2*r.every))
	switch {
	case (r.ahead != nil || again) && anyTime != nil:
		a = anyTime
	case a != nil:
		r.rounds++
		if r.rounds < behindAfter {
			a = nil
		}
	case anyTime != nil:
		// Only reports from before the fall: wait for later ones.
	default:
		r.rounds = 0
		if r.ahead != nil && !mine.Slots.Contains(r.ahead.Slots) {
			r.dropped = now
		}
	}
	if a != nil {
		r.dropped = time.Time{}
	}
	r.setAhead(a, probeErr)
	r.judged = now
	// Whatever the path, another view may be newer.
	return r.outreached(mine, others, now, time.Time{}, func(ReachReport) bool { return true }) != nil
}

// outreached returns the recent report of another instance whose slots
// strictly contain mine, from a probe begun at since or later (one begun
// before mine fell may predate a failure that a later probe would have
// met too), for which counts holds: the one that reached most, or nil.
// Under mu.
func (r *Reach) outreached(mine ReachReport, others []ReachReport, now, since time.Time, counts func(ReachReport) bool) *ReachReport {
	var best *ReachReport
	for i, o := range others {
		if o.ID == mine.ID || !r.recent(o.At, now) || o.At.Before(since) || !o.Slots.StrictlyContains(mine.Slots) || !counts(o) {
			continue
		}
		if best == nil || o.Slots.Len() > best.Slots.Len() {
			best = &others[i]
		}
	}
	return best
}

// setAhead records the report that outreached this instance's, logging a
// change. Under mu.
func (r *Reach) setAhead(ahead *ReachReport, probeErr error) {
	switch {
	case ahead != nil && r.ahead == nil:
		r.log.Warn("another instance reaches primaries this one does not: not ready until it does",
			"slots_reached", r.mine.Slots.Len(), "other", ahead.ID, "other_slots_reached", ahead.Slots.Len(), "err", probeErr)
	case ahead == nil && r.ahead != nil:
		r.log.Info("no other instance reaches primaries this one does not any more", "slots_reached", r.mine.Slots.Len())
	}
	r.ahead = ahead
}

// probedView records what the probe of this view's primaries that ended
// at found, and the other views' primaries to ask next round.
func (r *Reach) probedView(answered, asked int, at time.Time, ask []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered, r.asked, r.countedAt, r.ask = answered, asked, at, ask
}

func (r *Reach) toAsk() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ask
}

// MostPrimaries reports whether more than half of the primaries of this
// instance's view answered its last probe, in the last two rounds: not so
// for an instance that reaches only a minority of the nodes, cut off from
// the others, which answer it CLUSTERDOWN as a cluster down for everyone
// does; nor when no recent probe tells.
func (r *Reach) MostPrimaries() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return 2*r.answered > r.asked && !r.now().After(r.countedAt.Add(2*r.every))
}

// Slots is how many slots' primaries answered this instance's last probe.
func (r *Reach) Slots() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mine.Slots.Len()
}

// Behind is nil unless another instance recently reached every primary
// this one did and more: then an error saying which.
func (r *Reach) Behind() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The judgement is renewed once a round; one not renewed for two
	// (the loop stopped, or stuck) lapses.
	now := r.now()
	if r.ahead == nil || now.After(r.judged.Add(2*r.every)) || !r.recent(r.ahead.At, now) {
		return nil
	}
	return fmt.Errorf("instance %s reaches the primaries of every slot this instance reaches (%d) and more (%d): this instance's path to a primary is cut",
		r.ahead.ID, r.mine.Slots.Len(), r.ahead.Slots.Len())
}

func (r *Reach) isQuiet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.quiet
}

// Quiet stops reporting, as a process that died does: its last report
// ages out within a round and a half.
func (r *Reach) Quiet() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quiet = true
}

// Withdraw stops reporting and withdraws this instance's reports at once:
// one that drains or stops is no instance for the others to be behind.
func (r *Reach) Withdraw(ctx context.Context) error {
	r.writing.Lock()
	defer r.writing.Unlock()
	r.Quiet()
	return r.store.ForgetReach(ctx, r.id)
}
