package drill

import (
	"errors"
	"fmt"
	"time"
)

// SLO is what Apollo must achieve through the fault.
type SLO struct {
	MinCallSuccess float64       // share of calls with every command answered
	MaxLatency     time.Duration // slowest call
}

// DefaultSLO: 99.99 % of calls fully answered, none slower than 250 ms.
func DefaultSLO() SLO { return SLO{MinCallSuccess: 0.9999, MaxLatency: 250 * time.Millisecond} }

// Validate reports an SLO that makes no sense.
func (s SLO) Validate() error {
	if s.MinCallSuccess < 0 || s.MinCallSuccess > 1 || s.MaxLatency <= 0 {
		return errors.New("SLO needs a call success ratio within [0, 1] and a positive max latency")
	}
	return nil
}

// Verdict is the SLO's judgement of the apollo configuration.
type Verdict struct {
	Config         string   `json:"config"`
	MinCallSuccess float64  `json:"min_call_success_ratio"`
	MaxLatencyMs   float64  `json:"max_latency_ms"`
	Passed         bool     `json:"passed"`
	Reasons        []string `json:"reasons,omitempty"`
}

// Judge checks the apollo report against the SLO. Without an apollo run
// there is nothing to judge, and the verdict passes with a reason saying so.
func (s SLO) Judge(reps []Report) Verdict {
	v := Verdict{Config: ConfigApollo, MinCallSuccess: s.MinCallSuccess, MaxLatencyMs: ms(s.MaxLatency), Passed: true}
	for _, r := range reps {
		if r.Name != ConfigApollo {
			continue
		}
		if r.CallSuccessRatio < s.MinCallSuccess {
			v.Passed = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("call success %.4f%% < %.4f%%", 100*r.CallSuccessRatio, 100*s.MinCallSuccess))
		}
		if r.MaxMs > ms(s.MaxLatency) {
			v.Passed = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("max latency %.1f ms > %.1f ms", r.MaxMs, ms(s.MaxLatency)))
		}
		return v
	}
	v.Reasons = []string{"apollo was not drilled"}
	return v
}
