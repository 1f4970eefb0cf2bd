package drill

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Report summarises one run. Field names are a stable JSON contract.
type Report struct {
	Name                string   `json:"name"`
	Fault               string   `json:"fault"`
	FaultAtS            float64  `json:"fault_at_s"`
	Calls               int      `json:"calls"`
	OKCalls             int      `json:"ok_calls"`
	Commands            int      `json:"commands"`
	OKCommands          int      `json:"ok_commands"`
	CallSuccessRatio    float64  `json:"call_success_ratio"`
	CommandSuccessRatio float64  `json:"command_success_ratio"`
	PreFaultCallsPerS   float64  `json:"pre_fault_calls_per_s"`
	GoodputRatio        float64  `json:"goodput_ratio"`
	SecondsBelow99      int      `json:"seconds_below_99"` // seconds in which < 99 % of the calls that ended fully succeeded (or none ended)
	P50Ms               float64  `json:"p50_ms"`
	P99Ms               float64  `json:"p99_ms"`
	MaxMs               float64  `json:"max_ms"`
	PerSecond           []Second `json:"per_second"`
}

// Second is one second of a run.
type Second struct {
	T       int     `json:"t"`
	Calls   int     `json:"calls"`
	OKCalls int     `json:"ok_calls"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	Fault   bool    `json:"fault"` // the fault was active during this second
}

// SuccessRatio is the share of this second's calls that fully succeeded.
func (s Second) SuccessRatio() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.OKCalls) / float64(s.Calls)
}

func merge(per [][]sample) []sample {
	var all []sample
	for _, s := range per {
		all = append(all, s...)
	}
	slices.SortFunc(all, func(a, b sample) int { return int(a.at - b.at) })
	return all
}

func summarise(plan Plan, fault Fault, all []sample) Report {
	rep := Report{FaultAtS: plan.FaultAt.Seconds()}
	if fault != nil {
		rep.Fault = fault.Name()
	}
	nsec := int(plan.Duration / time.Second)
	secs := make([][]time.Duration, nsec)
	rep.PerSecond = make([]Second, nsec)
	var lats []time.Duration
	preOK, faultOK := 0, 0
	for _, s := range all {
		rep.Calls++
		rep.Commands += s.of
		rep.OKCommands += s.ok
		full := s.ok == s.of
		if full {
			rep.OKCalls++
			switch {
			case s.at < warmup(plan):
				// connections are still being dialled: not the steady rate
			case s.at < plan.FaultAt:
				preOK++
			case s.at < faultEnd(plan):
				faultOK++
			}
		}
		lats = append(lats, s.latency)
		i := min(int(s.at/time.Second), nsec-1)
		secs[i] = append(secs[i], s.latency)
		rep.PerSecond[i].Calls++
		if full {
			rep.PerSecond[i].OKCalls++
		}
	}
	for i := range rep.PerSecond {
		rep.PerSecond[i].T = i
		rep.PerSecond[i].Fault = faultDuring(plan, i)
		rep.PerSecond[i].P99Ms = ms(quantile(secs[i], 0.99))
		rep.PerSecond[i].MaxMs = ms(quantile(secs[i], 1))
		if rep.PerSecond[i].SuccessRatio() < 0.99 { // no completed call at all counts too
			rep.SecondsBelow99++
		}
	}
	rep.CallSuccessRatio = ratio(rep.OKCalls, rep.Calls)
	rep.CommandSuccessRatio = ratio(rep.OKCommands, rep.Commands)
	rep.P50Ms, rep.P99Ms, rep.MaxMs = ms(quantile(lats, .5)), ms(quantile(lats, .99)), ms(quantile(lats, 1))
	if pre := (plan.FaultAt - warmup(plan)).Seconds(); pre > 0 {
		rep.PreFaultCallsPerS = float64(preOK) / pre
		window := (faultEnd(plan) - plan.FaultAt).Seconds()
		if expected := rep.PreFaultCallsPerS * window; expected > 0 {
			rep.GoodputRatio = float64(faultOK) / expected
		}
	}
	return rep
}

// faultEnd is when the fault window closes: the heal, or the end of the run.
func faultEnd(plan Plan) time.Duration {
	if plan.HealAt != 0 {
		return plan.HealAt
	}
	return plan.Duration
}

// faultDuring reports whether the fault was active during second i.
func faultDuring(plan Plan, i int) bool {
	from, to := time.Duration(i)*time.Second, time.Duration(i+1)*time.Second
	return to > plan.FaultAt && from < faultEnd(plan)
}

// warmup is the start of the run left out of the pre-fault rate: the first
// second, when the fault comes late enough to leave a steady second after it.
func warmup(plan Plan) time.Duration {
	if plan.FaultAt >= 2*time.Second {
		return time.Second
	}
	return 0
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

// WriteTable prints reports side by side, one row each.
func WriteTable(w io.Writer, reps []Report) {
	fmt.Fprintf(w, "%-22s %10s %10s %10s %9s %8s %8s %8s %9s\n", "config", "calls", "call ok %", "cmd ok %", "goodput", "<99% s", "p50 ms", "p99 ms", "max ms")
	for _, r := range reps {
		fmt.Fprintf(w, "%-22s %10d %10.3f %10.3f %8.1f%% %8d %8.2f %8.2f %9.1f\n", r.Name, r.Calls,
			100*r.CallSuccessRatio, 100*r.CommandSuccessRatio, 100*r.GoodputRatio, r.SecondsBelow99, r.P50Ms, r.P99Ms, r.MaxMs)
	}
}

// WriteSecond prints one live progress line.
func WriteSecond(w io.Writer, name string, s Second) {
	mark := ""
	if s.Fault {
		mark = "  << fault"
	}
	fmt.Fprintf(w, "%-14s t=%3ds calls=%6d ok=%7.3f%% max=%7.1fms%s\n", name, s.T, s.Calls, 100*s.SuccessRatio(), s.MaxMs, mark)
}
