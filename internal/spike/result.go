package spike

import (
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/geocell"
)

// maxErrors is how many distinct errors a run keeps as a sample.
const maxErrors = 10

// result tallies the run per second, over the storm window, and per cell.
func (d *driving) result(cfg Config, p plan, start time.Time, redis *sampler) Run {
	seconds := int(cfg.Duration.Seconds())
	in, out := make([]tally, seconds), make([]tally, seconds)
	var stormIn, stormOut, settledOut tally
	// Settled: after the storm's first allocation timeout, plus a scan.
	settledFrom := cfg.StormStart + cfg.AllocationTimeout + 2*time.Second
	r := Run{Name: p.name, Mode: p.mode, Storm: p.storm, FirstTripAfter: -1, StartUnixMs: start.UnixMilli()}
	near := cellsNear(cfg.Hotspot, gridReachM, cfg.Rule.CellBits)
	cells := map[string]*CellStat{}
	for _, c := range near {
		cells[c.String()] = &CellStat{Box: boxOf(c)}
	}
	seen := map[string]bool{}
	stormStart := start.Add(cfg.StormStart)
	for i := range d.fates {
		f := &d.fates[i]
		sec := min(int(f.arr.At.Seconds()), seconds-1)
		inStorm := f.arr.At >= cfg.StormStart && f.arr.At < cfg.StormEnd
		if f.arr.InHotspot {
			in[sec].add(f)
			if inStorm {
				stormIn.add(f)
			}
		} else {
			out[sec].add(f)
			if inStorm {
				stormOut.add(f)
				if f.arr.At >= settledFrom {
					settledOut.add(f)
				}
			}
		}
		if f.arr.Storm && !f.tripAt.IsZero() {
			if after := f.tripAt.Sub(stormStart); r.FirstTripAfter < 0 || after < r.FirstTripAfter {
				r.FirstTripAfter = after
			}
		}
		addToCell(cells, cfg.Rule.CellBits, f)
		for _, err := range []error{f.err, f.settleErr} {
			if err != nil && len(r.Errors) < maxErrors && !seen[err.Error()] {
				seen[err.Error()] = true
				r.Errors = append(r.Errors, err.Error())
			}
		}
	}
	rates, total := redis.perSecond(start, seconds)
	for s := 0; s < seconds; s++ {
		r.Seconds = append(r.Seconds, Second{T: s, Inside: in[s].counts(), Outside: out[s].counts(), RedisCmds: rates[s]})
	}
	r.Inside, r.Outside, r.OutsideSettled, r.RedisCmds = stormIn.counts(), stormOut.counts(), settledOut.counts(), total
	for _, c := range near {
		r.Grid = append(r.Grid, *cells[c.String()])
	}
	return r
}

func addToCell(cells map[string]*CellStat, bits uint, f *fate) {
	if !f.sent {
		return
	}
	c, err := geocell.Of(f.arr.Pickup.Lat, f.arr.Pickup.Lng, bits)
	if err != nil {
		return
	}
	cs, ok := cells[c.String()]
	if !ok {
		return
	}
	cs.Requested++
	switch {
	case f.rejected:
		cs.Rejected++
	case f.status == booking.Allocated || f.status == booking.Accepted:
		cs.Allocated++
	case f.status == booking.Unallocated:
		cs.Unallocated++
	}
	if !f.tripAt.IsZero() {
		cs.Trips++
	}
}

// summarize compares each run's outside-hotspot riders with the baseline;
// nothing without one (the outage variant).
func summarize(runs []Run) []Line {
	base := runs[0]
	if base.Name != "baseline" {
		return nil
	}
	var out []Line
	for _, r := range runs {
		l := Line{Run: r.Name, OutsideSuccess: r.Outside.Success(), OutsideP99: r.Outside.LatencyP99,
			OutsideAllocP99: r.Outside.AllocP99, InsideRejected: r.Inside.Rejected, InsideWould: r.Inside.WouldReject}
		l.SuccessVsBase = rel(l.OutsideSuccess, base.Outside.Success())
		l.P99VsBase = rel(l.OutsideP99, base.Outside.LatencyP99)
		l.Within5Pct = l.SuccessVsBase >= -0.05 && l.P99VsBase <= 0.05
		l.SettledSuccessVsBase = rel(r.OutsideSettled.Success(), base.OutsideSettled.Success())
		l.SettledP99 = r.OutsideSettled.LatencyP99
		l.SettledP99VsBase = rel(l.SettledP99, base.OutsideSettled.LatencyP99)
		l.SettledWithin5Pct = r.OutsideSettled.Requested > 0 && l.SettledSuccessVsBase >= -0.05 && l.SettledP99VsBase <= 0.05
		out = append(out, l)
	}
	return out
}

// rel is the relative change from base to v; 0 when base is 0.
func rel(v, base float64) float64 {
	if base == 0 {
		return 0
	}
	return v/base - 1
}
