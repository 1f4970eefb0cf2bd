package console

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// series is one time series of a gathered sample: a counter's or gauge's
// value, or a histogram's cumulative buckets.
type series struct {
	name   string
	key    string // the label set, canonical: one series of name per key
	labels map[string]string
	value  float64
	bounds []float64 // histogram upper bounds, +Inf last
	counts []float64 // cumulative counts, per bound
}

func (s series) has(where map[string]string) bool {
	for k, v := range where {
		if s.labels[k] != v {
			return false
		}
	}
	return true
}

// sample is every apollo_ series of the registry at one moment.
type sample struct {
	at     time.Time
	series []series
}

// total sums the values of name's series whose labels match where.
func (s sample) total(name string, where map[string]string) float64 {
	sum := 0.0
	for _, x := range s.series {
		if x.name == name && x.has(where) {
			sum += x.value
		}
	}
	return sum
}

// byLabel sums name's series matching where, per value of label.
func (s sample) byLabel(name, label string, where map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s.series {
		if x.name == name && x.has(where) {
			out[x.labels[label]] += x.value
		}
	}
	return out
}

// hist is name's histogram series matching where, summed.
func (s sample) hist(name string, where map[string]string) (bounds, counts []float64) {
	for _, x := range s.series {
		if x.name != name || !x.has(where) || len(x.bounds) == 0 {
			continue
		}
		if counts == nil {
			bounds, counts = x.bounds, make([]float64, len(x.counts))
		}
		if len(x.counts) == len(counts) {
			for i, c := range x.counts {
				counts[i] += c
			}
		}
	}
	return bounds, counts
}

// Sampler gathers a registry's apollo_ metrics every second and keeps the
// last few minutes, from which the console computes rates and latency
// quantiles exactly as PromQL's rate() and histogram_quantile() would over
// the same samples.
type Sampler struct {
	g     prometheus.Gatherer
	now   func() time.Time
	keep  int
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	samples []sample // oldest first
}

// NewSampler keeps keep samples of g, one every every.
func NewSampler(g prometheus.Gatherer, every time.Duration, keep int, now func() time.Time, log *slog.Logger) *Sampler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sampler{g: g, now: now, keep: max(keep, 2), every: every, log: log}
}

// Run samples until stop is closed; its caller owns the goroutine.
func (s *Sampler) Run(stop <-chan struct{}) {
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	s.Sample()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			s.Sample()
		}
	}
}

// Sample gathers once now.
func (s *Sampler) Sample() {
	mfs, err := s.g.Gather()
	if err != nil {
		// Gather returns what it could alongside the error: use it.
		s.log.Debug("console: gathering metrics", "err", err)
	}
	series := flatten(mfs)
	s.mu.Lock()
	defer s.mu.Unlock()
	smp := sample{at: s.now(), series: series}
	if n := len(s.samples); n > 0 && !smp.at.After(s.samples[n-1].at) {
		return // a clock step back, or two samplers: keep the samples in order
	}
	s.samples = append(s.samples, smp)
	if over := len(s.samples) - s.keep; over > 0 {
		s.samples = slices.Delete(s.samples, 0, over)
	}
}

// window returns the latest sample and the one closest to d before it
// (the oldest kept if none is that old; the latest itself when it is the
// only one, so that totals show and rates are 0); ok is false before the
// first sample.
func (s *Sampler) window(d time.Duration) (old, cur sample, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return sample{}, sample{}, false
	}
	cur = s.samples[len(s.samples)-1]
	old = s.samples[0]
	for i := len(s.samples) - 2; i >= 0; i-- {
		old = s.samples[i]
		if cur.at.Sub(old.at) >= d {
			break
		}
	}
	return old, cur, true
}

// all is every kept sample, oldest first.
func (s *Sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// latest is the newest sample; ok is false before the first.
func (s *Sampler) latest() (sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return sample{}, false
	}
	return s.samples[len(s.samples)-1], true
}

// flatten turns gathered families into series, keeping Apollo's own.
func flatten(mfs []*dto.MetricFamily) []series {
	var out []series
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "apollo_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			x := series{name: name, labels: make(map[string]string, len(m.GetLabel()))}
			var key strings.Builder
			for _, l := range m.GetLabel() { // sorted by name, as Gather returns them
				x.labels[l.GetName()] = l.GetValue()
				key.WriteString(l.GetName() + "=" + l.GetValue() + "\x00")
			}
			x.key = key.String()
			switch {
			case m.Counter != nil:
				x.value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				x.value = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				x.value = float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					x.bounds = append(x.bounds, b.GetUpperBound())
					x.counts = append(x.counts, float64(b.GetCumulativeCount()))
				}
				x.bounds = append(x.bounds, inf)
				x.counts = append(x.counts, float64(h.GetSampleCount()))
			default:
				continue
			}
			out = append(out, x)
		}
	}
	return out
}

// labelValues lists the values label takes in name's series, sorted.
func (s sample) labelValues(name, label string) []string {
	set := map[string]bool{}
	for _, x := range s.series {
		if x.name == name {
			set[x.labels[label]] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
