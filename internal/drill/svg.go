package drill

import (
	"fmt"
	"io"
	"math"
	"strings"
)

var configColors = map[string]string{ConfigLegacy: "#d62728", ConfigGoRedis: "#ff7f0e", ConfigApollo: "#2ca02c"}

const (
	svgW, svgH   = 900, 520
	padL, padR   = 70, 20
	panelH       = 170
	top1, top2   = 60, 300
	minMs, maxMs = 0.5, 10000.0
)

// WriteSVG draws the drill: per second, the share of calls fully answered
// and the p99 latency (log scale) of each configuration, with the fault
// window shaded. It is self-contained, for a README or a postmortem.
func WriteSVG(w io.Writer, res Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">apollo drill --scenario %s: %s</text>`, padL, esc(res.Scenario), esc(res.Fault))
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555">%d workers × batch reads of %d drivers; fault at %.0fs</text>`, padL, res.Workers, res.Pipeline, res.FaultAtS)
	x := func(t float64) float64 { return padL + t/res.Duration*(svgW-padL-padR) }
	end := res.Duration
	if res.HealAtS > 0 {
		end = res.HealAtS
	}
	for _, top := range []int{top1, top2} {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f3d5d5" opacity="0.6"/>`, x(res.FaultAtS), top, x(end)-x(res.FaultAtS), panelH)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`, padL, top, svgW-padL-padR, panelH)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#a33">fault</text>`, x(res.FaultAtS)+4, top1+14)
	yOK := func(r float64) float64 { return top1 + (1-r)*panelH }
	yLat := func(v float64) float64 {
		v = math.Min(math.Max(v, minMs), maxMs)
		return top2 + (1-(math.Log10(v)-math.Log10(minMs))/(math.Log10(maxMs)-math.Log10(minMs)))*panelH
	}
	for _, p := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.0f%%</text><line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`, padL-6, yOK(p)+4, 100*p, padL, svgW-padR, yOK(p), yOK(p))
	}
	for _, v := range []float64{1, 10, 100, 1000, 10000} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g ms</text><line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`, padL-6, yLat(v)+4, v, padL, svgW-padR, yLat(v), yLat(v))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">calls with every command answered, per second</text>`, padL, top1-6)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">p99 call latency, per second (log scale)</text>`, padL, top2-6)
	for t := 0.0; t <= res.Duration; t += tickStep(res.Duration) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0fs</text>`, x(t), top2+panelH+16, t)
	}
	for i, r := range res.Configs {
		color := configColors[r.Name]
		if color == "" {
			color = "#1f77b4"
		}
		var ok []string
		var lat [][]string // a second with no completed call breaks the latency line
		lat = append(lat, nil)
		for _, s := range r.PerSecond {
			ok = append(ok, fmt.Sprintf("%.1f,%.1f", x(float64(s.T)+0.5), yOK(s.SuccessRatio())))
			if s.Calls == 0 {
				lat = append(lat, nil)
				continue
			}
			lat[len(lat)-1] = append(lat[len(lat)-1], fmt.Sprintf("%.1f,%.1f", x(float64(s.T)+0.5), yLat(s.P99Ms)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, color, strings.Join(ok, " "))
		for _, seg := range lat {
			if len(seg) == 1 {
				fmt.Fprintf(&b, `<circle cx="%s" r="2.5" fill="%s"/>`, strings.Replace(seg[0], ",", `" cy="`, 1), color)
			} else if len(seg) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, color, strings.Join(seg, " "))
			}
		}
		lx := padL + 10 + i*260
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d">%s: %.2f%% ok, max %.0f ms</text>`,
			lx, svgH-22, color, lx+20, svgH-16, esc(r.Name), 100*r.CallSuccessRatio, r.MaxMs)
	}
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}

func tickStep(d float64) float64 {
	switch {
	case d <= 20:
		return 2
	case d <= 60:
		return 10
	default:
		return 30
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
