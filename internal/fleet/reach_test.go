package fleet

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestOutreached(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	mine := ReachReport{ID: "me", Slots: 10923, At: t0, Until: t0.Add(3 * time.Second)}
	from := t0.Add(time.Second)
	now := t0.Add(2 * time.Second)
	rep := func(id string, slots int, at time.Duration) ReachReport {
		return ReachReport{ID: id, Slots: slots, At: t0.Add(at), Until: t0.Add(at + 3*time.Second)}
	}
	tests := []struct {
		name   string
		others []ReachReport
		want   string // the ID outreaching mine, "" for none
	}{
		{"alone", nil, ""},
		{"my own report", []ReachReport{rep("me", 16384, 1500*time.Millisecond)}, ""},
		{"another reaches as much", []ReachReport{rep("b", 10923, 1500*time.Millisecond)}, ""},
		{"another reaches less", []ReachReport{rep("b", 5461, 1500*time.Millisecond)}, ""},
		{"another reaches more, measured after mine fell", []ReachReport{rep("b", 16384, 1500*time.Millisecond)}, "b"},
		{"measured before mine fell: it may predate the failure", []ReachReport{rep("b", 16384, 500*time.Millisecond)}, ""},
		{"ran out", []ReachReport{rep("b", 16384, -1500*time.Millisecond)}, ""},
		{"the one that reaches most", []ReachReport{rep("b", 13000, 1100*time.Millisecond), rep("c", 16384, 1200*time.Millisecond), rep("d", 12000, 1300*time.Millisecond)}, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outreached(mine, from, tt.others, now)
			if id := func() string {
				if got == nil {
					return ""
				}
				return got.ID
			}(); id != tt.want {
				t.Errorf("outreached = %q, want %q", id, tt.want)
			}
		})
	}
}

// reachStore keeps reports in memory, as every shard would.
type reachStore struct {
	reports map[string]ReachReport
	down    bool
}

func (s *reachStore) ReportReach(_ context.Context, r ReachReport) error {
	if s.down {
		return errDown
	}
	s.reports[r.ID] = r
	return nil
}

func (s *reachStore) Reaches(_ context.Context, now time.Time) ([]ReachReport, error) {
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

type prober struct{ slots int }

func (p *prober) ReachPrimaries(context.Context) (int, int, error) {
	if p.slots < 16384 {
		return p.slots, 16384, errors.New("primary x: unreachable")
	}
	return p.slots, 16384, nil
}

// Two instances take turns, a second apart, as their loops do. One cut
// off from a primary the other reaches is behind from the other's first
// probe after its fall; both cut off alike, neither is; and the one
// behind is itself again once its path is back.
func TestAnInstanceIsBehindOnlyWhileAnotherReachesWhatItDoesNot(t *testing.T) {
	now := time.Unix(1_000, 0)
	clock := func() time.Time { return now }
	store := &reachStore{reports: map[string]ReachReport{}}
	pa, pb := &prober{16384}, &prober{16384}
	log := slog.New(slog.DiscardHandler)
	a := NewReach("a", store, pa, clock, time.Second, log)
	b := NewReach("b", store, pb, clock, time.Second, log)
	round := func() {
		a.Round(context.Background())
		now = now.Add(500 * time.Millisecond)
		b.Round(context.Background())
		now = now.Add(500 * time.Millisecond)
	}
	round()
	if a.Behind() != nil || b.Behind() != nil {
		t.Fatalf("behind with every primary reached: %v, %v", a.Behind(), b.Behind())
	}

	pa.slots = 10923 // a's path to one primary is cut
	round()
	if err := a.Behind(); err != nil {
		t.Fatalf("a is behind on b's report from before it fell: %v", err)
	}
	round()
	if err := a.Behind(); err == nil || !strings.Contains(err.Error(), "10923 slots, and instance b reaches 16384") {
		t.Fatalf("a, cut off from a primary b reaches: Behind() = %v", err)
	}
	if b.Behind() != nil {
		t.Fatalf("b is behind: %v", b.Behind())
	}
	if a.Slots() != 10923 {
		t.Errorf("a.Slots() = %d", a.Slots())
	}

	pb.slots = 10923 // and now b's too: the primary is down for both
	round()
	round()
	if a.Behind() != nil || b.Behind() != nil {
		t.Fatalf("behind while both reach alike: %v, %v", a.Behind(), b.Behind())
	}

	pb.slots = 16384 // the primary is back for b only
	round()
	round()
	if a.Behind() == nil {
		t.Fatal("a not behind b again")
	}
	pa.slots = 16384
	round()
	if err := a.Behind(); err != nil {
		t.Fatalf("a behind with its path back: %v", err)
	}

	// A store that stops answering: the judgement rests on the last
	// report read, and ends with it.
	pa.slots = 10923
	round()
	round()
	if a.Behind() == nil {
		t.Fatal("a not behind b")
	}
	store.down = true
	a.Round(context.Background())
	if a.Behind() == nil {
		t.Fatal("a's judgement dropped at the first store failure")
	}
	now = now.Add(4 * time.Second)
	a.Round(context.Background())
	if err := a.Behind(); err != nil {
		t.Fatalf("a behind on a report that ran out: %v", err)
	}
}
