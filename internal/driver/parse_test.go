package driver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	for _, s := range Statuses() {
		got, err := ParseStatus(string(s))
		if err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %q, %v; want %q, nil", s, got, err, s)
		}
	}
	for _, in := range []string{"", "Offline", "on-trip", " available", "busy"} {
		got, err := ParseStatus(in)
		var ae *InvalidArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArgument) || ae.Field != "status" {
			t.Errorf("ParseStatus(%q) = %q, %v; want *InvalidArgumentError for field status", in, got, err)
		}
	}
}

func TestParseEvent(t *testing.T) {
	for _, ev := range Events() {
		got, err := ParseEvent(string(ev))
		if err != nil || got != ev {
			t.Errorf("ParseEvent(%q) = %q, %v; want %q, nil", ev, got, err, ev)
		}
	}
	tests := []struct {
		in      string
		wantMsg string
	}{
		{"", `got ""`},
		{"GO_ONLINE", `got "GO_ONLINE"`},
		{strings.Repeat("x", 100), `got "` + strings.Repeat("x", 32) + `"`},
	}
	for _, tt := range tests {
		got, err := ParseEvent(tt.in)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseEvent(%q) = %q, %v; want ErrInvalidArgument", tt.in, got, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "event must be one of go_online, ") || !strings.HasSuffix(err.Error(), tt.wantMsg) {
			t.Errorf("ParseEvent(%q) error = %q, want it to end with %q", tt.in, err, tt.wantMsg)
		}
	}
}

func TestStatusAndEventJSON(t *testing.T) {
	type msg struct {
		Status Status `json:"status"`
		Event  Event  `json:"event"`
	}
	var m msg
	if err := json.Unmarshal([]byte(`{"status":"on_trip","event":"end_trip"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusOnTrip || m.Event != EventEndTrip {
		t.Errorf("decoded %+v", m)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"status":"on_trip","event":"end_trip"}`; got != want {
		t.Errorf("json.Marshal = %s, want %s", got, want)
	}
	for _, bad := range []string{`{"status":"gone"}`, `{"event":"fly"}`} {
		if err := json.Unmarshal([]byte(bad), &m); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("json.Unmarshal(%s) error = %v, want ErrInvalidArgument", bad, err)
		}
	}
}
