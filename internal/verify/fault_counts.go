package verify

// faultCounts pairs each inject with the heal that follows it and counts,
// per kind of fault, the operations invoked between the two (an inject
// whose heal is missing lasts to the end of the run). Faults that failed to
// inject are not counted as injected.
func faultCounts(h History) []FaultCounts {
	var out []FaultCounts
	index := map[string]int{}
	var open *FaultEvent
	window := func(kind string, from, to int64) {
		i, ok := index[kind]
		if !ok {
			i = len(out)
			index[kind] = i
			out = append(out, FaultCounts{Kind: kind})
		}
		fc := &out[i]
		fc.Injected++
		for _, op := range h.Ops {
			if op.Invoke < from || op.Invoke > to {
				continue
			}
			fc.Ops++
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
	for i := range h.Faults {
		ev := &h.Faults[i]
		switch {
		case ev.Action == "inject" && ev.Err == "":
			open = ev
		case ev.Action == "heal" && open != nil && open.Fault == ev.Fault:
			window(open.Kind, open.At, ev.At)
			if ev.Effect != "" {
				fc := &out[index[open.Kind]]
				fc.Effects = append(fc.Effects, ev.Effect)
			}
			open = nil
		}
	}
	if open != nil {
		window(open.Kind, open.At, 1<<62)
	}
	return out
}
