package verify

import "fmt"

// faultWindow is one fault injected, from its inject to the end of its
// heal (to the end of the run if it was never healed).
type faultWindow struct {
	kind, fault, effect string
	healErr             string // why its heal failed, if it did
	from, to            int64
}

// faultWindows pairs each inject with the heal that follows it. Faults
// that failed to inject are left out.
func faultWindows(h History) []faultWindow {
	var out []faultWindow
	var open *FaultEvent
	for i := range h.Faults {
		ev := &h.Faults[i]
		switch {
		case ev.Action == "inject" && ev.Err == "":
			open = ev
		case ev.Action == "heal" && open != nil && open.Fault == ev.Fault:
			out = append(out, faultWindow{kind: open.Kind, fault: open.Fault, effect: ev.Effect, healErr: ev.Err, from: open.At, to: ev.At})
			open = nil
		}
	}
	if open != nil {
		out = append(out, faultWindow{kind: open.Kind, fault: open.Fault, from: open.At, to: 1 << 62})
	}
	return out
}

// faultCounts counts, per kind of fault, the operations invoked while it
// lasted.
func faultCounts(h History) []FaultCounts {
	var out []FaultCounts
	index := map[string]int{}
	for _, w := range faultWindows(h) {
		i, ok := index[w.kind]
		if !ok {
			i = len(out)
			index[w.kind] = i
			out = append(out, FaultCounts{Kind: w.kind})
		}
		fc := &out[i]
		fc.Injected++
		if w.effect != "" {
			fc.Effects = append(fc.Effects, w.effect)
		}
		for _, op := range h.Ops {
			if op.Invoke < w.from || op.Invoke > w.to {
				continue
			}
			fc.Ops++
			if op.Status == 0 || op.Status >= 500 {
				fc.Unavailable++
			}
			switch op.Outcome {
			case OK:
				fc.OK++
			case Failed:
				fc.Failed++
			default:
				fc.Unknown++
			}
		}
	}
	return out
}

// nearFault is how far before or after a violation's operations a fault
// is still named beside it: a fault acts on what was written just before
// it (a failover drops what its new primary had not received) and is seen
// by what is read just after.
const nearFault = 2e9 // ns

// faultsNear names the faults that lasted, at least in part, within
// nearFault of the operations ops name (IDs into h.Ops), for a reader to
// see what a violation happened beside. None when ops name none.
func faultsNear(h History, ops []int) []string {
	named := make(map[int]bool, len(ops))
	for _, id := range ops {
		named[id] = true
	}
	from, to := int64(1<<62), int64(-1)
	for _, op := range h.Ops {
		if named[op.ID] {
			from, to = min(from, op.Invoke), max(to, op.Return)
		}
	}
	if to < 0 {
		return nil
	}
	var out []string
	for _, w := range faultWindows(h) {
		if w.to >= from-nearFault && w.from <= to+nearFault {
			healed := "never healed"
			switch {
			case w.to < 1<<62 && w.healErr != "":
				healed = fmt.Sprintf("its heal failed at %s (%s)", runTime(w.to), w.healErr)
			case w.to < 1<<62:
				healed = "healed by " + runTime(w.to)
			}
			out = append(out, fmt.Sprintf("%s: %s, injected at %s, %s", w.kind, w.fault, runTime(w.from), healed))
		}
	}
	return out
}
