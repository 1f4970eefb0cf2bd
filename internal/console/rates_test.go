package console

import (
	"math"
	"testing"
	"time"
)

func TestBucketQuantileInterpolatesAsPrometheusDoes(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1, inf}
	for _, tc := range []struct {
		name string
		q    float64
		cum  []float64
		want float64
	}{
		{"all in the first bucket, median", 0.5, []float64{10, 10, 10, 10}, 0.0005},
		{"median in the second bucket", 0.5, []float64{4, 8, 8, 8}, 0.001 + (0.01-0.001)*(4-4)/4},
		{"p99 in the third bucket", 0.99, []float64{0, 0, 100, 100}, 0.01 + (0.1-0.01)*99/100},
		{"p99 in +Inf answers the highest finite bound", 0.99, []float64{0, 0, 0, 5}, 0.1},
		{"no observations", 0.5, []float64{0, 0, 0, 0}, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bucketQuantile(tc.q, bounds, tc.cum)
			if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("bucketQuantile(%g, %v) = %g, want %g", tc.q, tc.cum, got, tc.want)
			}
		})
	}
}

func TestRateIsPerSecondSeriesBySeriesAndCountsAResetFromZero(t *testing.T) {
	at := time.Unix(1000, 0)
	s := func(dt time.Duration, v float64) sample {
		return sample{at: at.Add(dt), series: []series{{name: "c", key: "k=a", labels: map[string]string{"k": "a"}, value: v},
			{name: "c", key: "k=b", labels: map[string]string{"k": "b"}, value: 1}}}
	}
	if got := rate(s(0, 10), s(2*time.Second, 30), "c", map[string]string{"k": "a"}); got != 10 {
		t.Errorf("rate over 2 s of +20 = %g, want 10", got)
	}
	if got := rate(s(0, 10), s(2*time.Second, 30), "c", nil); got != 10 {
		t.Errorf("rate of the sum = %g, want 10 (b did not move)", got)
	}
	if got := rate(s(0, 30), s(time.Second, 5), "c", map[string]string{"k": "a"}); got != 5 {
		t.Errorf("rate across a reset = %g, want 5 (counted from zero, as increase() does)", got)
	}
	if got := rate(s(0, 30), s(time.Second, 5), "c", nil); got != 5 {
		t.Errorf("rate of the sum across a's reset = %g, want 5: b did not move, a grew by 5 from zero", got)
	}
	appeared := s(time.Second, 7)
	appeared.series = append(appeared.series, series{name: "c", key: "k=new", labels: map[string]string{"k": "new"}, value: 100})
	if got := rate(s(0, 7), appeared, "c", nil); got != 0 {
		t.Errorf("rate with a series that appeared = %g, want 0: its increase is not known yet", got)
	}
	pts := perSecond([]sample{s(0, 0), s(time.Second, 5), s(2*time.Second, 5)}, "c", map[string]string{"k": "a"})
	if len(pts) != 2 || pts[0].V != 5 || pts[1].V != 0 {
		t.Errorf("perSecond = %+v, want 5 then 0", pts)
	}
}

func TestCodeClass(t *testing.T) {
	for code, want := range map[string]string{"200": "2xx", "201": "2xx", "304": "2xx", "429": "4xx", "503": "5xx", "abc": "", "700": ""} {
		if got := codeClass(code); got != want {
			t.Errorf("codeClass(%q) = %q, want %q", code, got, want)
		}
	}
}
