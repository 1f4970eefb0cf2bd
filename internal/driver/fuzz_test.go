package driver

import (
	"errors"
	"math"
	"regexp"
	"testing"
	"time"
)

func FuzzParseEvent(f *testing.F) {
	for _, ev := range Events() {
		f.Add(string(ev))
	}
	f.Add("")
	f.Add("GO_ONLINE")
	f.Add("\xff")
	f.Fuzz(func(t *testing.T, s string) {
		ev, err := ParseEvent(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParseEvent(%q) error %v does not match ErrInvalidArgument", s, err)
			}
			// At most 32 runes are echoed, each at most 10 bytes once quoted.
			if len(err.Error()) > 500 {
				t.Fatalf("ParseEvent(%q) error is %d bytes long: input echoed unbounded", s, len(err.Error()))
			}
			return
		}
		if string(ev) != s {
			t.Fatalf("ParseEvent(%q) = %q", s, ev)
		}
		if _, err := ParseStatus(s); err == nil {
			t.Fatalf("%q parses as both an event and a status", s)
		}
	})
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_\-:.]{1,64}$`)

func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"drv-1", "", "a b", "{x}", "city:sg.drv_42", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateID(id)
		if want := idPattern.MatchString(id); (err == nil) != want {
			t.Fatalf("ValidateID(%q) = %v, want ok %t", id, err, want)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("ValidateID(%q) error %v does not match ErrInvalidArgument", id, err)
		}
	})
}

func FuzzValidateLocation(f *testing.F) {
	f.Add(0.0, 0.0)
	f.Add(90.0, -180.0)
	f.Add(math.NaN(), 1.0)
	f.Add(math.Inf(1), 1.0)
	f.Add(-90.00000000000001, 0.0)
	f.Fuzz(func(t *testing.T, lat, lng float64) {
		err := ValidateLocation(lat, lng)
		want := lat >= -90 && lat <= 90 && lng >= -180 && lng <= 180 // false for NaN
		if (err == nil) != want {
			t.Fatalf("ValidateLocation(%v, %v) = %v, want ok %t", lat, lng, err, want)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("ValidateLocation(%v, %v) error %v does not match ErrInvalidArgument", lat, lng, err)
		}
	})
}

// FuzzApply drives the machine with arbitrary input: it must never panic,
// and every success must leave a driver whose fields fit its status.
func FuzzApply(f *testing.F) {
	f.Add("offline", "go_online", "", "", false, int64(0), int64(0), "car")
	f.Add("available", "reserve", "", "b1", false, int64(0), int64(60), "")
	f.Add("reserved", "accept", "b1", "b1", false, int64(59), int64(60), "")
	f.Add("reserved", "start_trip", "b1", "b1", true, int64(10), int64(60), "")
	f.Add("reserved", "expire", "b1", "b1", true, int64(60), int64(60), "")
	f.Add("on_trip", "end_trip", "b1", "b2", false, int64(0), int64(0), "")
	f.Fuzz(func(t *testing.T, status, event, held, named string, accepted bool, nowSec, untilSec int64, service string) {
		d := Driver{ID: "d", Status: Status(status), BookingID: held, Accepted: accepted,
			ReservedUntil: time.Unix(60, 0), Services: []string{"car"}, Version: 3}
		tr := Transition{Event: Event(event), BookingID: named, Until: time.Unix(untilSec, 0), Services: []string{service}}
		got, err := Apply(d, tr, time.Unix(nowSec, 0))
		if err != nil {
			for _, s := range []error{ErrInvalidArgument, ErrIllegalTransition, ErrWrongBooking, ErrReservationNotExpired, ErrReservationExpired} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Apply error %v matches no sentinel", err)
		}
		if got.Version != d.Version+1 {
			t.Fatalf("Version = %d, want %d", got.Version, d.Version+1)
		}
		switch got.Status {
		case StatusOffline, StatusAvailable:
			if got.BookingID != "" || !got.ReservedUntil.IsZero() || got.Accepted {
				t.Fatalf("%s driver keeps a booking: %+v", got.Status, got)
			}
		case StatusReserved:
			if got.BookingID == "" || got.ReservedUntil.IsZero() {
				t.Fatalf("reserved driver without a booking or expiry: %+v", got)
			}
		case StatusOnTrip:
			if got.BookingID == "" || !got.ReservedUntil.IsZero() || got.Accepted {
				t.Fatalf("on_trip driver without a booking or with reservation fields: %+v", got)
			}
		default:
			t.Fatalf("Apply produced unknown status %q", got.Status)
		}
	})
}
