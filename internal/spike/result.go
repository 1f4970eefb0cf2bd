package spike

import (
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/geocell"
)

// maxErrors is how many distinct errors a run keeps as a sample.
const maxErrors = 10

// result tallies the run per second, over the storm window, and per cell.
func (d *driving) result(cfg Config, p plan, start time.Time, redis *sampler) (Run, samples) {
	seconds := int(cfg.Duration.Seconds())
	in, out := make([]tally, seconds), make([]tally, seconds)
	var stormIn, stormOut, settledOut tally
	// Settled: after the storm's first allocation timeout, plus a scan.
	settledFrom := cfg.StormStart + cfg.AllocationTimeout + 2*time.Second
	r := Run{Name: p.name, Round: p.round, Mode: p.mode, Storm: p.storm, FirstTripAfter: -1, StartUnixMs: start.UnixMilli()}
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
	return r, samples{storm: stormOut, settled: settledOut}
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
