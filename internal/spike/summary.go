package spike

import (
	"fmt"
	"strings"
	"time"
)

// baselineName is the no-spike run every other run is compared with.
const baselineName = "baseline"

// roundName names a run of a round: round 1 keeps the plain name.
func roundName(name string, round int) string {
	if round <= 1 {
		return name
	}
	return fmt.Sprintf("%s #%d", name, round)
}

// kindOf is a run's name without its round.
func kindOf(name string) string {
	if i := strings.Index(name, " #"); i >= 0 {
		return name[:i]
	}
	return name
}

// isBaselineLine reports whether l compares a baseline with itself.
func isBaselineLine(l Line) bool {
	return l.Run == baselineName || strings.HasPrefix(l.Run, baselineName+" ")
}

// samples are the outside-hotspot riders of one run that the summary
// compares: over the storm, and once it has settled.
type samples struct {
	storm, settled tally
}

// summarize compares each run's outside-hotspot riders with its round's
// baseline and, over several rounds, every kind of run pooled; nothing
// without a baseline (the outage variant).
func summarize(runs []Run, smps []samples) []Line {
	if len(runs) == 0 || runs[0].Name != baselineName {
		return nil
	}
	base := map[int]int{} // round → index of its baseline
	var kinds []string
	byKind := map[string][]int{}
	for i, r := range runs {
		if r.Name == roundName(baselineName, r.Round) {
			base[r.Round] = i
		}
		k := kindOf(r.Name)
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], i)
	}
	var out []Line
	for i, r := range runs {
		b := base[r.Round]
		out = append(out, compare(r.Name, []Run{r}, smps[i:i+1], smps[b:b+1]))
	}
	if len(byKind[baselineName]) < 2 {
		return out
	}
	var bs []samples // every round's baseline
	for _, i := range byKind[baselineName] {
		bs = append(bs, smps[i])
	}
	for _, k := range kinds {
		idx := byKind[k]
		rs, ss := make([]Run, len(idx)), make([]samples, len(idx))
		for j, i := range idx {
			rs[j], ss[j] = runs[i], smps[i]
		}
		out = append(out, compare(fmt.Sprintf("%s (%d rounds pooled)", k, len(idx)), rs, ss, bs))
	}
	return out
}

// compare builds the line of runs (their riders pooled) against the
// baseline riders.
func compare(name string, runs []Run, smps, base []samples) Line {
	storm, settled := pool(smps)
	bStorm, bSettled := pool(base)
	r, b, rs, bs := storm.counts(), bStorm.counts(), settled.counts(), bSettled.counts()
	l := Line{Run: name, Rounds: len(runs), OutsideSuccess: r.Success(), OutsideP99: r.LatencyP99, OutsideAllocP99: r.AllocP99, FirstTripAfter: -1}
	for _, run := range runs {
		l.InsideRejected += run.Inside.Rejected
		l.InsideWould += run.Inside.WouldReject
	}
	l.SuccessVsBase, l.P99VsBase = rel(l.OutsideSuccess, b.Success()), rel(l.OutsideP99, b.LatencyP99)
	l.Within5Pct = l.SuccessVsBase >= -0.05 && l.P99VsBase <= 0.05
	l.SettledSuccessVsBase = rel(rs.Success(), bs.Success())
	l.SettledP99 = rs.LatencyP99
	l.SettledP99VsBase = rel(l.SettledP99, bs.LatencyP99)
	l.SettledWithin5Pct = rs.Requested > 0 && l.SettledSuccessVsBase >= -0.05 && l.SettledP99VsBase <= 0.05
	l.FirstTripAfter, l.RedisCmds = means(runs)
	return l
}

// pool merges runs' samples into one set of riders.
func pool(smps []samples) (storm, settled tally) {
	for _, s := range smps {
		storm.merge(s.storm)
		settled.merge(s.settled)
	}
	return storm, settled
}

// means are the runs' mean time to the first trip (over those with one;
// -1 if none) and mean Redis commands.
func means(runs []Run) (firstTrip time.Duration, redisCmds int64) {
	var trips []time.Duration
	for _, r := range runs {
		redisCmds += r.RedisCmds
		if r.FirstTripAfter >= 0 {
			trips = append(trips, r.FirstTripAfter)
		}
	}
	redisCmds /= int64(len(runs))
	if len(trips) == 0 {
		return -1, redisCmds
	}
	var sum time.Duration
	for _, t := range trips {
		sum += t
	}
	return sum / time.Duration(len(trips)), redisCmds
}

// rel is the relative change from base to v; 0 when base is 0.
func rel(v, base float64) float64 {
	if base == 0 {
		return 0
	}
	return v/base - 1
}
