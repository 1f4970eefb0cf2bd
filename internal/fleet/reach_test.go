package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Shards of a 3-primary cluster, as slot sets.
var (
	allSlots = [][2]int{{0, 16383}}
	noP1     = [][2]int{{5461, 16383}}                 // cut off from the first primary
	noP2     = [][2]int{{0, 5460}, {10923, 16383}}     // from the second
	noP1P2   = [][2]int{{10923, 16383}}                // from both
	p1p2     = [][2]int{{0, 10922}}                    // cut off from the third
	someNoP1 = [][2]int{{5461, 10922}, {12000, 16383}} // less than noP1, within it
)

func TestSlotSets(t *testing.T) {
	all, a, b := SlotSetOf(allSlots), SlotSetOf(noP1), SlotSetOf(noP2)
	if all.Len() != 16384 || a.Len() != 10923 || SlotSetOf(nil).Len() != 0 {
		t.Fatalf("Len: %d %d %d", all.Len(), a.Len(), SlotSetOf(nil).Len())
	}
	tests := []struct {
		name   string
		s, o   SlotSet
		strict bool
	}{
		{"all holds a part", all, a, true},
		{"a set does not strictly hold itself", a, a, false},
		{"a part does not hold all", a, all, false},
		{"two cuts, neither holds the other", a, b, false},
		{"and the other way", b, a, false},
		{"a set holds a smaller one within it", a, SlotSetOf(someNoP1), true},
	}
	for _, tt := range tests {
		if got := tt.s.StrictlyContains(tt.o); got != tt.strict {
			t.Errorf("%s: StrictlyContains = %v", tt.name, got)
		}
	}
	for _, s := range []SlotSet{all, a, b, SlotSetOf(nil), SlotSetOf([][2]int{{7, 7}, {9, 12}})} {
		back, err := ParseSlotSet(s.String())
		if err != nil || back != s {
			t.Errorf("ParseSlotSet(%q) = %s, %v", s.String(), back, err)
		}
	}
	if got := b.String(); got != "0-5460,10923-16383" {
		t.Errorf("String = %q", got)
	}
	for _, bad := range []string{"", "x", "5-3", "0-16384", "-1", "1,", "1-2-3"} {
		if _, err := ParseSlotSet(bad); err == nil {
			t.Errorf("ParseSlotSet(%q) accepted", bad)
		}
	}
}

func FuzzParseSlotSet(f *testing.F) {
	for _, s := range []string{"-", "0-16383", "0-5460,10923-16383", "7,9-12", "5-3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseSlotSet(v)
		if err != nil {
			return
		}
		back, err := ParseSlotSet(s.String())
		if err != nil || back != s {
			t.Fatalf("%q parsed to %s, which reads back as %s, %v", v, s, back, err)
		}
	})
}

// reachStore keeps reports in memory, as every shard would.
type reachStore struct {
	mu      sync.Mutex
	reports map[string]ReachReport
	down    bool
}

func (s *reachStore) ReportReach(_ context.Context, r ReachReport) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errDown
	}
	s.reports[r.ID] = r
	return nil
}

func (s *reachStore) Reaches(_ context.Context, now time.Time) ([]ReachReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errDown
	}
	var out []ReachReport
	for _, r := range s.reports {
		if r.Until.After(now) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *reachStore) ForgetReach(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reports, id)
	return nil
}

// The cluster's shards, each with a primary and a replica, in every
// view: the view changes only after a failover, which promotes "n1".
var (
	shardSlots = [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	primaries  = []string{"p1", "p2", "p3"}
	replicas   = []string{"n1", "n2", "n3"}
)

// prober reaches the primaries whose shard reach covers: each of its view
// (view, or primaries), as the slot ranges it is set to. Refresh moves it
// to after and afterView, when set (its view of the cluster catching up
// with a failover). Of the other nodes it answers those not cut.
type prober struct {
	reach, after     [][2]int
	view, afterView  []string
	cut              map[string]bool
	refreshed, asked int
	during           func() // once, after a probe measured and before it returns
}

func (p *prober) primaries() []string {
	if p.view != nil {
		return p.view
	}
	return primaries
}

// probe splits the primaries of its view by whether reach covers their shard.
func (p *prober) probe() (answered, unanswered []string) {
	got := SlotSetOf(p.reach)
	for i, addr := range p.primaries() {
		if got.Contains(SlotSetOf(shardSlots[i : i+1])) {
			answered = append(answered, addr)
		} else {
			unanswered = append(unanswered, addr)
		}
	}
	return answered, unanswered
}

func (p *prober) ReachPrimaries(context.Context) (ranges [][2]int, answered, unanswered []string, err error) {
	ranges = p.reach
	answered, unanswered = p.probe()
	if d := p.during; d != nil {
		p.during = nil
		d()
	}
	return ranges, answered, unanswered, nil
}

func (p *prober) Unanswered(_ context.Context, addrs []string) []string {
	p.asked++
	_, missed := p.probe()
	var out []string
	for _, a := range addrs {
		known := slices.Contains(primaries, a) || slices.Contains(replicas, a)
		if known && (slices.Contains(missed, a) || p.cut[a]) {
			out = append(out, a)
		}
	}
	return out
}

func (p *prober) RequestRefresh() {
	p.refreshed++
	if p.after != nil {
		p.reach, p.after = p.after, nil
	}
	if p.afterView != nil {
		p.view, p.afterView = p.afterView, nil
	}
}

// fleetOf is instances taking turns, spread over each second as their
// loops are, on one test clock.
type fleetOf struct {
	now     time.Time
	store   *reachStore
	probers map[string]*prober
	reaches map[string]*Reach
	order   []string
}

func newFleetOf(ids ...string) *fleetOf {
	f := &fleetOf{now: time.Unix(1_000, 0), store: &reachStore{reports: map[string]ReachReport{}},
		probers: map[string]*prober{}, reaches: map[string]*Reach{}, order: ids}
	for _, id := range ids {
		f.probers[id] = &prober{reach: allSlots}
		f.reaches[id] = NewReach(id, f.store, f.probers[id], func() time.Time { return f.now }, time.Second, slog.New(slog.DiscardHandler))
	}
	return f
}

// round gives every instance one round, a second in all.
func (f *fleetOf) round() {
	step := time.Second / time.Duration(len(f.order))
	for _, id := range f.order {
		f.reaches[id].Round(context.Background())
		f.now = f.now.Add(step)
	}
}

func (f *fleetOf) rounds(n int) {
	for range n {
		f.round()
	}
}

// behind lists the instances that are behind now.
func (f *fleetOf) behind() []string {
	var out []string
	for _, id := range f.order {
		if f.reaches[id].Behind() != nil {
			out = append(out, id)
		}
	}
	return out
}

// cutOffA cuts a off from P1, until it is behind.
func (f *fleetOf) cutOffA(t *testing.T) {
	t.Helper()
	f.probers["a"].reach = noP1
	f.rounds(behindAfter + 1)
	f.want(t, "a cut off from P1", "a")
}

// wantEachRound gives n rounds and wants ids behind after each.
func (f *fleetOf) wantEachRound(t *testing.T, n int, what string, ids ...string) {
	t.Helper()
	for range n {
		f.round()
		f.want(t, what, ids...)
	}
}

func (f *fleetOf) want(t *testing.T, what string, ids ...string) {
	t.Helper()
	if got := strings.Join(f.behind(), ","); got != strings.Join(ids, ",") {
		t.Fatalf("%s: behind %q, want %q", what, got, strings.Join(ids, ","))
	}
}

func TestAnInstanceCutOffFromAPrimaryTheOthersReachIsBehind(t *testing.T) {
	f := newFleetOf("a", "b")
	f.round()
	f.want(t, "every primary reached")
	f.probers["a"].reach = noP1
	f.round()
	f.want(t, "one round after a's cut: b's report is from before it")
	f.rounds(behindAfter)
	f.want(t, "a cut off from a primary b reaches", "a")
	if err := f.reaches["a"].Behind(); err == nil || !strings.Contains(err.Error(), "instance b reaches the primaries of every slot this instance reaches (10923) and more (16384)") {
		t.Errorf("Behind() = %v", err)
	}
	if f.reaches["a"].Slots() != 10923 {
		t.Errorf("Slots() = %d", f.reaches["a"].Slots())
	}
	f.probers["a"].reach = allSlots
	f.round()
	f.want(t, "a's path back")
}

// A behind instance that loses more (a second path, or a primary down for
// every instance) stays behind those that reach what it does not: its
// fall leaves out the reports from before it only for a new judgement. A
// reviewer found the first version letting it back in for three rounds.
func TestABehindInstanceThatLosesMoreStaysBehind(t *testing.T) {
	f := newFleetOf("a", "b")
	f.round()
	f.cutOffA(t)
	f.probers["a"].reach = noP1P2
	f.wantEachRound(t, 3, "a cut off from P2 too", "a")
	f.probers["b"].reach = noP2 // P2 down for both: a still lacks P1
	f.wantEachRound(t, 3, "P2 down for all", "a")
}

// A primary all reach goes down between a behind instance's probe and
// the other's, so the report it reads next neither contains its own nor
// is contained: that round it is let in, and it is behind again the
// round after, not four rounds later (a third review's sequence).
func TestABehindInstanceIsBehindAgainAfterAFaultAllMetBetweenTwoProbes(t *testing.T) {
	f := newFleetOf("a", "b")
	f.round()
	f.cutOffA(t)
	f.probers["a"].during = func() { // P2 crashes while a's probe is out
		f.probers["b"].reach = noP2
		f.reaches["b"].Round(context.Background())
		f.probers["a"].reach = noP1P2
	}
	f.round()
	f.wantEachRound(t, 4, "a still cut off from P1, which b reaches", "a")
}

// A store that cannot be read keeps a judgement only while its report
// still strictly contains this instance's reach.
func TestAJudgementKeptWithoutReadingEndsWhenItNoLongerHolds(t *testing.T) {
	f := newFleetOf("a", "b")
	f.round()
	f.probers["a"].reach = [][2]int{{5461, 10922}} // P2 alone
	f.probers["b"].reach = p1p2
	f.rounds(behindAfter + 1)
	f.want(t, "a reaches P2, b P1 and P2", "a")
	f.store.mu.Lock()
	f.store.down = true
	f.store.mu.Unlock()
	f.probers["a"].reach = [][2]int{{5461, 16383}} // P2 and P3: b no longer holds it
	f.reaches["a"].Round(context.Background())
	f.want(t, "a reaches P3, which b's last report lacks")
}

func TestInstancesThatLoseAPrimaryTogetherStayIn(t *testing.T) {
	f := newFleetOf("a", "b", "c")
	f.round()
	for _, id := range f.order {
		f.probers[id].reach = noP1
	}
	f.rounds(3)
	f.want(t, "a primary down for all")
	// After the failover, a reaches the new primary first; the others
	// renew their view on seeing it, and are never behind.
	f.failover("a")
	for _, id := range []string{"b", "c"} {
		f.probers[id].after, f.probers[id].afterView = allSlots, newView
	}
	f.wantEachRound(t, 3, "the others a round behind a's view of the failover")
	if f.probers["b"].refreshed == 0 || f.probers["c"].refreshed == 0 {
		t.Errorf("refreshes: b %d, c %d, want some each", f.probers["b"].refreshed, f.probers["c"].refreshed)
	}
}

// newView is the view after n1 took over from p1.
var newView = []string{"n1", "p2", "p3"}

// failover has p1 go down for all, and the instances ids see n1 take over.
func (f *fleetOf) failover(ids ...string) {
	for id, p := range f.probers {
		p.cut = map[string]bool{"p1": true}
		if slices.Contains(ids, id) {
			p.reach, p.view = allSlots, newView
		}
	}
}

// An instance whose view of the cluster stays older than another's for
// long after a failover (the nodes it asks for the slot map have not
// heard of it yet) reaches the new primary all the same: it is not behind
// the other. CI found the first version taking it out after three rounds.
func TestAnInstanceWhoseViewIsOlderButThatReachesTheNewPrimaryStaysIn(t *testing.T) {
	f := newFleetOf("a", "b")
	f.round()
	for _, id := range f.order {
		f.probers[id].reach = noP1
	}
	f.round()
	f.failover("a") // b's refreshes find the old view, round after round
	f.wantEachRound(t, 10, "b's view older than a's")
	if f.probers["b"].asked == 0 {
		t.Error("b never asked n1 itself")
	}
}

// An instance cut off from the new primary is behind one that reaches it,
// whether or not its view has caught up with the failover.
func TestAnInstanceCutOffFromTheNewPrimaryIsBehindWhateverItsView(t *testing.T) {
	for _, caughtUp := range []bool{false, true} {
		f := newFleetOf("a", "b")
		f.round()
		f.failover("a")
		f.probers["b"].reach, f.probers["b"].cut["n1"] = noP1, true
		if caughtUp {
			f.probers["b"].view = newView
		}
		f.rounds(behindAfter + 1)
		f.want(t, fmt.Sprintf("b cut off from n1, view caught up %v", caughtUp), "b")
	}
}

func TestTwoInstancesCutOffFromDifferentPrimariesAreNeitherBehind(t *testing.T) {
	f := newFleetOf("a", "b", "c")
	f.round()
	f.probers["a"].reach, f.probers["b"].reach = noP1, noP2
	f.rounds(behindAfter + 1)
	f.want(t, "a and c: a behind c; b behind c", "a", "b")
	f.probers["c"].reach = noP1P2 // c loses both
	f.rounds(behindAfter + 1)
	f.want(t, "a and b reach what the other does not, and more than c", "c")
	f.probers["c"].reach = p1p2
	f.rounds(3)
	f.want(t, "each of the three reaches a primary another does not")
}

// The instance ahead goes: killed, its last report stops counting within
// three rounds and a half; draining, it withdraws its reports at once.
func TestAnInstanceThatGoesHoldsNoOtherOut(t *testing.T) {
	tests := []struct {
		name   string
		goes   func(*Reach)
		rounds int
	}{
		{"killed", func(r *Reach) { r.Quiet() }, 4},
		{"draining", func(r *Reach) { _ = r.Withdraw(context.Background()) }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleetOf("a", "b")
			f.round()
			f.cutOffA(t)
			tt.goes(f.reaches["b"])
			f.order = []string{"a"}
			f.rounds(tt.rounds)
			f.want(t, "b gone")
		})
	}
}

func TestAReportFromTheFutureDoesNotCount(t *testing.T) {
	f := newFleetOf("a", "b")
	f.probers["a"].reach = noP1
	f.store.reports["z"] = ReachReport{ID: "z", Slots: SlotSetOf(allSlots), At: f.now.Add(10 * time.Second), Until: f.now.Add(13 * time.Second)}
	f.rounds(behindAfter + 1)
	f.want(t, "z's clock 10 s ahead; b behind nobody, a behind b", "a")
	if got := f.reaches["a"].Behind(); got == nil || strings.Contains(got.Error(), "instance z") {
		t.Errorf("a behind %v, want b", got)
	}
}

func TestAStoreThatStopsAnsweringLeavesTheJudgementUntilItLapses(t *testing.T) {
	f := newFleetOf("a", "b")
	f.round()
	f.cutOffA(t)
	f.store.mu.Lock()
	f.store.down = true
	f.store.mu.Unlock()
	f.reaches["a"].Round(context.Background())
	f.want(t, "a's judgement at the first store failure", "a")
	f.probers["a"].reach = allSlots
	f.reaches["a"].Round(context.Background())
	f.want(t, "a's path back, with nothing read: it has caught up with b's report")
	f.probers["a"].reach = noP1
	f.store.mu.Lock()
	f.store.down = false
	f.store.mu.Unlock()
	f.rounds(behindAfter + 1)
	f.want(t, "cut again", "a")
	f.store.mu.Lock()
	f.store.down = true
	f.store.mu.Unlock()
	f.now = f.now.Add(3 * time.Second)
	f.reaches["a"].Round(context.Background())
	f.want(t, "b's report no longer recent")
}

// blockingProber answers nothing until its context ends.
type blockingProber struct{ prober }

func (p *blockingProber) ReachPrimaries(ctx context.Context) ([][2]int, []string, []string, error) {
	<-ctx.Done()
	return nil, nil, nil, ctx.Err()
}

// Run ends when stopped, a round in progress included, and leaves no
// goroutine behind (TestMain's goleak).
func TestRunEndsWhenStoppedMidRound(t *testing.T) {
	store := &reachStore{reports: map[string]ReachReport{}}
	r := NewReach("a", store, &blockingProber{}, time.Now, time.Hour, slog.New(slog.DiscardHandler))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { r.Run(stop); close(done) }()
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run still running 10 s after stop, in a round of an hour")
	}
}

// An instance reaches most primaries when more than half of those of its
// view answered its last probe: all but a dead one of three, not one of
// three (cut off with a minority of the nodes), nor before any probe.
func TestMostPrimariesIsMoreThanHalfOfTheLastProbe(t *testing.T) {
	tests := []struct {
		name  string
		reach [][2]int
		want  bool
	}{
		{"all three", allSlots, true},
		{"two of three", noP1, true},
		{"one of three", noP1P2, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		f := newFleetOf("a")
		if f.reaches["a"].MostPrimaries() {
			t.Fatalf("%s: most primaries before any probe", tt.name)
		}
		f.probers["a"].reach = tt.reach
		f.round()
		if got := f.reaches["a"].MostPrimaries(); got != tt.want {
			t.Errorf("%s: MostPrimaries() = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Halves, of views of even size, are not most.
	r := newFleetOf("a").reaches["a"]
	for _, c := range []struct {
		answered, asked int
		want            bool
	}{{1, 2, false}, {2, 4, false}, {3, 4, true}, {0, 0, false}, {1, 1, true}} {
		r.probedView(c.answered, c.asked, r.now(), nil)
		if got := r.MostPrimaries(); got != c.want {
			t.Errorf("%d of %d: MostPrimaries() = %v, want %v", c.answered, c.asked, got, c.want)
		}
	}
	// A probe two rounds old no longer tells.
	f := newFleetOf("a")
	f.round()
	f.now = f.now.Add(2*time.Second + time.Millisecond)
	if f.reaches["a"].MostPrimaries() {
		t.Error("MostPrimaries() from a probe over two rounds old")
	}
}
