package console

import (
	"math"
	"time"
)

var inf = math.Inf(1)

// increase is how much name's counters matching where grew between two
// samples, summed series by series: a counter that went down was reset (a
// restart) and grew from zero, as PromQL's increase() counts it; a series
// absent from old has no known increase yet. There is no extrapolation to
// the window's edges: the samples are the window.
func increase(old, cur sample, name string, where map[string]string) float64 {
	was := map[string]float64{}
	for _, x := range old.series {
		if x.name == name && x.has(where) {
			was[x.key] = x.value
		}
	}
	sum := 0.0
	for _, x := range cur.series {
		if x.name != name || !x.has(where) {
			continue
		}
		prev, ok := was[x.key]
		switch {
		case !ok:
		case x.value < prev:
			sum += x.value
		default:
			sum += x.value - prev
		}
	}
	return sum
}

// rate is increase per second: sum(rate()) over the same two samples.
func rate(old, cur sample, name string, where map[string]string) float64 {
	dt := cur.at.Sub(old.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return increase(old, cur, name, where) / dt
}

// ratesByLabel is rate per value of label.
func ratesByLabel(old, cur sample, name, label string, where map[string]string) map[string]float64 {
	out := map[string]float64{}
	for v := range cur.byLabel(name, label, where) {
		w := map[string]string{label: v}
		for k, x := range where {
			w[k] = x
		}
		out[v] = rate(old, cur, name, w)
	}
	return out
}

// quantile is histogram_quantile(q) of the observations made between two
// samples of name's histogram matching where: NaN when there were none.
// Like Prometheus, it interpolates linearly within the bucket the rank
// falls in, and answers the highest finite bound for the +Inf bucket.
func quantile(q float64, old, cur sample, name string, where map[string]string) float64 {
	bounds, now := cur.hist(name, where)
	_, was := old.hist(name, where)
	if len(now) == 0 {
		return math.NaN()
	}
	delta := make([]float64, len(now))
	for i := range now {
		delta[i] = now[i]
		if len(was) == len(now) && was[len(was)-1] <= now[len(now)-1] {
			delta[i] -= was[i] // else a reset: everything counted is new
		}
	}
	return bucketQuantile(q, bounds, delta)
}

// bucketQuantile is the q-quantile of cumulative bucket counts.
func bucketQuantile(q float64, bounds, cum []float64) float64 {
	n := len(cum)
	if n == 0 || cum[n-1] <= 0 {
		return math.NaN()
	}
	rank := q * cum[n-1]
	i := 0
	for i < n-1 && cum[i] < rank {
		i++
	}
	if math.IsInf(bounds[i], 1) {
		if n >= 2 {
			return bounds[n-2]
		}
		return math.NaN()
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = bounds[i-1], cum[i-1]
	}
	in := cum[i] - below
	if in <= 0 {
		return bounds[i]
	}
	return lo + (bounds[i]-lo)*(rank-below)/in
}

// perSecond is, for every pair of consecutive samples, the rate of a
// counter total: the points of a traffic chart.
func perSecond(samples []sample, name string, where map[string]string) []Point {
	var out []Point
	for i := 1; i < len(samples); i++ {
		out = append(out, Point{At: samples[i].at, V: rate(samples[i-1], samples[i], name, where)})
	}
	return out
}

// Point is one value of a chart's series at a time.
type Point struct {
	At time.Time
	V  float64
}
