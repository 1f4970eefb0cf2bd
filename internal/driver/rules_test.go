package driver

import (
	"flag"
	"testing"
	"time"
)

func TestRulesStaleAndAvailable(t *testing.T) {
	r := Rules{StaleAfter: 30 * time.Second}
	fresh := Driver{ID: "d", Status: StatusAvailable, Services: []string{"car", "bike"}, LastHeartbeat: t0}
	tests := []struct {
		name          string
		d             func(Driver) Driver
		now           time.Time
		service       string
		wantStale     bool
		wantAvailable bool
	}{
		{"fresh", nil, t0.Add(time.Second), "car", false, true},
		{"second service", nil, t0, "bike", false, true},
		{"service not offered", nil, t0, "food", false, false},
		{"empty service", nil, t0, "", false, false},
		{"exactly StaleAfter is still fresh", nil, t0.Add(30 * time.Second), "car", false, true},
		{"just past StaleAfter", nil, t0.Add(30*time.Second + time.Nanosecond), "car", true, false},
		{"heartbeat from a clock ahead", nil, t0.Add(-5 * time.Second), "car", false, true},
		{"never heartbeated", func(d Driver) Driver { d.LastHeartbeat = time.Time{}; return d }, t0, "car", true, false},
		{"offline", func(d Driver) Driver { d.Status = StatusOffline; return d }, t0, "car", false, false},
		{"reserved", func(d Driver) Driver { d.Status = StatusReserved; return d }, t0, "car", false, false},
		{"on trip", func(d Driver) Driver { d.Status = StatusOnTrip; return d }, t0, "car", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fresh
			if tt.d != nil {
				d = tt.d(d)
			}
			if got := r.Stale(d, tt.now); got != tt.wantStale {
				t.Errorf("Stale = %t, want %t", got, tt.wantStale)
			}
			if got := r.Available(d, tt.now, tt.service); got != tt.wantAvailable {
				t.Errorf("Available(%q) = %t, want %t", tt.service, got, tt.wantAvailable)
			}
		})
	}
}

func TestRulesConfig(t *testing.T) {
	r := DefaultRules()
	if err := r.Validate(); err != nil {
		t.Fatalf("DefaultRules().Validate() = %v", err)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	r.RegisterFlags(fs)
	if err := fs.Parse([]string{"-driver.stale-after=45s"}); err != nil {
		t.Fatal(err)
	}
	if r.StaleAfter != 45*time.Second {
		t.Errorf("StaleAfter after flag = %s, want 45s", r.StaleAfter)
	}
	for _, bad := range []time.Duration{0, -time.Second} {
		if err := (Rules{StaleAfter: bad}).Validate(); err == nil {
			t.Errorf("Rules{StaleAfter: %s}.Validate() = nil, want error", bad)
		}
	}
}
