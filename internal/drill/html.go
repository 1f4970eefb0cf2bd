package drill

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteHTML writes a self-contained page: the chart, the summary table and
// the SLO verdict.
func WriteHTML(w io.Writer, res Result) error {
	var svg strings.Builder
	if err := WriteSVG(&svg, res); err != nil {
		return err
	}
	var table strings.Builder
	WriteTable(&table, res.Configs)
	verdict := "PASSED"
	if !res.SLO.Passed {
		verdict = "FAILED: " + strings.Join(res.SLO.Reasons, "; ")
	}
	_, err := fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>apollo drill: %[1]s</title>
<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style>
</head><body>
<h1>apollo drill: %[1]s</h1>
<p>%[2]s. %[3]d workers, each making batch reads of %[4]d drivers (one pipeline of HMGET per call) for %.0[5]fs; the fault starts at %.0[6]fs.
Each configuration ran on a fresh local cluster.</p>
%[7]s
<h2>Summary</h2>
<pre>%[8]s</pre>
<p><b>SLO</b> (apollo: call success ≥ %.4[9]f%%, max latency ≤ %.0[10]f ms): <b>%[11]s</b></p>
<p>Call success: every command of the call answered. Goodput: fully answered calls during the fault
÷ (pre-fault rate × fault window). &lt;99%% s: seconds in which under 99%% of calls fully succeeded.</p>
</body></html>
`, html.EscapeString(res.Scenario), html.EscapeString(res.Fault), res.Workers, res.Pipeline, res.Duration, res.FaultAtS, svg.String(), html.EscapeString(table.String()),
		100*res.SLO.MinCallSuccess, res.SLO.MaxLatencyMs, html.EscapeString(verdict))
	return err
}
