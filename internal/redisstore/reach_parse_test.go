package redisstore

import (
	"slices"
	"testing"
)

// A report that is not what ReportReach writes is refused, not read as
// another instance's reach.
func TestReachReportsThatAreNotWellFormedAreRefused(t *testing.T) {
	for _, raw := range []string{
		"",
		"0-16383 1000 4000",           // no primaries
		"0-16383 a:1 1000",            // no until
		"0-16383 a:1,,b:2 1000 4000",  // an empty address
		"0-16383 a:1, 1000 4000",      // a trailing comma
		"x a:1 1000 4000",             // slots
		"0-16383 a:1 soon 4000",       // at
		"0-16383 a:1 1000 4000 extra", // one field too many
	} {
		if r, err := parseReach("i", raw); err == nil {
			t.Errorf("parseReach(%q) = %+v, want an error", raw, r)
		}
	}
	r, err := parseReach("i", "0-5460 - 1000 4000")
	if err != nil || r.Primaries != nil || r.Slots.Len() != 5461 {
		t.Errorf(`parseReach("0-5460 - 1000 4000") = %+v, %v`, r, err)
	}
}

func FuzzParseReach(f *testing.F) {
	for _, s := range []string{"0-16383 a:1,b:2 1000 4000", "- - 0 0", "0-5460 [::1]:7000 1 2", "0-16383 a:1,,b 1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := parseReach("i", raw)
		if err != nil {
			return
		}
		back, err := parseReach("i", formatReach(r))
		if err != nil || back.Slots != r.Slots || !slices.Equal(back.Primaries, r.Primaries) || !back.At.Equal(r.At) || !back.Until.Equal(r.Until) {
			t.Fatalf("%q parsed to %+v, which reads back as %+v, %v", raw, r, back, err)
		}
	})
}
