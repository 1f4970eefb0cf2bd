package drill

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestSummariseCountsCallsGoodputAndBadSeconds(t *testing.T) {
	plan := Plan{Workers: 1, Pipeline: 2, Duration: 4 * time.Second, FaultAt: 2 * time.Second, CallTimeout: time.Second}
	var all []sample
	for i := 0; i < 100; i++ { // second 0: warm-up, all fine
		all = append(all, sample{at: time.Duration(i) * 10 * time.Millisecond, latency: time.Millisecond, ok: 2, of: 2})
	}
	for i := 0; i < 100; i++ { // second 1: steady, all fine
		all = append(all, sample{at: time.Second + time.Duration(i)*10*time.Millisecond, latency: 2 * time.Millisecond, ok: 2, of: 2})
	}
	for i := 0; i < 100; i++ { // seconds 2-3: fault, half the calls lose a command
		ok := 2
		if i%2 == 0 {
			ok = 1
		}
		all = append(all, sample{at: 2*time.Second + time.Duration(i)*20*time.Millisecond, latency: 50 * time.Millisecond, ok: ok, of: 2})
	}
	rep := summarise(plan, nil, all)
	if rep.Calls != 300 || rep.OKCalls != 250 || rep.Commands != 600 || rep.OKCommands != 550 {
		t.Fatalf("counts: %+v", rep)
	}
	if rep.PreFaultCallsPerS != 100 {
		t.Errorf("pre-fault rate = %v, want 100 (second 1 only)", rep.PreFaultCallsPerS)
	}
	if got, want := rep.GoodputRatio, 50.0/200; got != want {
		t.Errorf("goodput = %v, want %v", got, want)
	}
	if rep.SecondsBelow99 != 2 || !rep.PerSecond[2].Fault || rep.PerSecond[1].Fault {
		t.Errorf("seconds below 99 = %d, fault flags %v %v", rep.SecondsBelow99, rep.PerSecond[1].Fault, rep.PerSecond[2].Fault)
	}
	if rep.MaxMs != 50 || rep.P50Ms != 2 {
		t.Errorf("latency p50 %v max %v", rep.P50Ms, rep.MaxMs)
	}
}

func TestSLOJudgesOnlyApollo(t *testing.T) {
	slo := DefaultSLO()
	reps := []Report{{Name: ConfigLegacy, CallSuccessRatio: 0.02, MaxMs: 3000}, {Name: ConfigApollo, CallSuccessRatio: 1, MaxMs: 40}}
	if v := slo.Judge(reps); !v.Passed {
		t.Errorf("apollo within the SLO judged failed: %+v", v)
	}
	reps[1].MaxMs = 300
	reps[1].CallSuccessRatio = 0.999
	v := slo.Judge(reps)
	if v.Passed || len(v.Reasons) != 2 {
		t.Errorf("apollo outside the SLO: %+v", v)
	}
}

func TestParsers(t *testing.T) {
	for _, s := range Scenarios() {
		if got, err := ParseScenario(string(s)); err != nil || got != s {
			t.Errorf("ParseScenario(%s) = %s, %v", s, got, err)
		}
	}
	if _, err := ParseScenario("meteor"); err == nil {
		t.Error("unknown scenario accepted")
	}
	if got, err := ParseConfigs(" apollo, legacy-2019 "); err != nil || strings.Join(got, ",") != "apollo,legacy-2019" {
		t.Errorf("ParseConfigs = %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "apollo,jedis"} {
		if _, err := ParseConfigs(bad); err == nil {
			t.Errorf("ParseConfigs(%q) accepted", bad)
		}
	}
}

func TestPlanValidate(t *testing.T) {
	ok := Plan{Workers: 1, Pipeline: 1, Duration: 10 * time.Second, FaultAt: 2 * time.Second, CallTimeout: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Plan){
		"no workers":        func(p *Plan) { p.Workers = 0 },
		"fault after end":   func(p *Plan) { p.FaultAt = time.Minute },
		"heal before fault": func(p *Plan) { p.HealAt = time.Second },
		"no call timeout":   func(p *Plan) { p.CallTimeout = 0 },
	} {
		p := ok
		edit(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	res := Result{Scenario: "replica-crash", Fault: "kill <x> & co", Workers: 2, Pipeline: 20, Duration: 3, FaultAtS: 1,
		Configs: []Report{{Name: ConfigApollo, PerSecond: []Second{{T: 0, Calls: 10, OKCalls: 10, P99Ms: 2}, {T: 1, Calls: 0}, {T: 2, Calls: 5, OKCalls: 4, P99Ms: 900}}}}}
	var b strings.Builder
	if err := WriteSVG(&b, res); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not well-formed XML: %v", err)
			}
			break
		}
	}
}
