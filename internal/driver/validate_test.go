package driver

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"d", true},
		{"drv-42", true},
		{"city:sg.drv_42", true},
		{"ABCxyz019", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"drv 42", false},
		{"{drv}", false},
		{"drv/42", false},
		{"drv\n", false},
		{"dr\u00e9", false},
	}
	for _, tt := range tests {
		err := ValidateID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateID(%q) = %v, want ok %t", tt.id, err, tt.ok)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("ValidateID(%q): errors.Is(%v, ErrInvalidArgument) = false", tt.id, err)
			}
			if got, want := err.Error(), "id must be 1 to 64 characters from [A-Za-z0-9_-:.]"; got != want {
				t.Errorf("ValidateID(%q) error = %q, want %q", tt.id, got, want)
			}
		}
	}
}

func TestValidateService(t *testing.T) {
	tests := []struct {
		s  string
		ok bool
	}{
		{"car", true},
		{"bike_2", true},
		{strings.Repeat("a", 32), true},
		{"", false},
		{strings.Repeat("a", 33), false},
		{"Car", false},
		{"car-xl", false},
		{"car ", false},
	}
	for _, tt := range tests {
		err := ValidateService(tt.s)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateService(%q) = %v, want ok %t", tt.s, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidateService(%q): errors.Is(%v, ErrInvalidArgument) = false", tt.s, err)
		}
	}
}

func TestValidateServices(t *testing.T) {
	many := make([]string, 17)
	for i := range many {
		many[i] = "s" + strings.Repeat("x", i)
	}
	tests := []struct {
		name     string
		services []string
		ok       bool
	}{
		{"one", []string{"car"}, true},
		{"several", []string{"car", "bike", "food"}, true},
		{"sixteen", many[:16], true},
		{"none", nil, false},
		{"seventeen", many, false},
		{"repeat", []string{"car", "bike", "car"}, false},
		{"bad name", []string{"car", ""}, false},
	}
	for _, tt := range tests {
		err := ValidateServices(tt.services)
		if (err == nil) != tt.ok {
			t.Errorf("%s: ValidateServices = %v, want ok %t", tt.name, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalidServices) || !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("%s: error %v should match ErrInvalidServices and ErrInvalidArgument", tt.name, err)
		}
	}
}

func TestValidateLocation(t *testing.T) {
	tests := []struct {
		lat, lng  float64
		wantField string
		wantMsg   string
	}{
		{0, 0, "", ""},
		{90, 180, "", ""},
		{-90, -180, "", ""},
		{1.3521, 103.8198, "", ""},
		{90.000001, 0, "lat", "lat must be within [-90, 90]"},
		{-91, 0, "lat", "lat must be within [-90, 90]"},
		{0, 180.5, "lng", "lng must be within [-180, 180]"},
		{0, -200, "lng", "lng must be within [-180, 180]"},
		{math.NaN(), 0, "lat", "lat must be a finite number"},
		{math.Inf(-1), 0, "lat", "lat must be a finite number"},
		{0, math.NaN(), "lng", "lng must be a finite number"},
		{0, math.Inf(1), "lng", "lng must be a finite number"},
	}
	for _, tt := range tests {
		err := ValidateLocation(tt.lat, tt.lng)
		if tt.wantMsg == "" {
			if err != nil {
				t.Errorf("ValidateLocation(%v, %v) = %v, want nil", tt.lat, tt.lng, err)
			}
			continue
		}
		var ae *InvalidArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidateLocation(%v, %v) = %v, want *InvalidArgumentError", tt.lat, tt.lng, err)
			continue
		}
		if ae.Field != tt.wantField || err.Error() != tt.wantMsg {
			t.Errorf("ValidateLocation(%v, %v) = field %q %q, want field %q %q", tt.lat, tt.lng, ae.Field, err, tt.wantField, tt.wantMsg)
		}
	}
}
