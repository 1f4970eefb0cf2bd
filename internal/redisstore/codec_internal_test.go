package redisstore

import (
	"testing"

	"github.com/apollo-platform/apollo/internal/driver"
)

// A driver's accept state is one hash field, so that a build that knows no
// withdrawn reservation (before 2026-12-06) reads it as not accepted, and
// overwrites it whole when it moves the driver: a withdrawn mark never
// outlives the reservation it was made on.
func TestTheAcceptStateRoundTrips(t *testing.T) {
	for _, tt := range []struct {
		accepted, withdrawn bool
		field               string
	}{
		{false, false, "0"},
		{true, false, "1"},
		{false, true, "w"},
	} {
		d := driver.Driver{ID: "d1", Status: driver.StatusReserved, BookingID: "b1", Accepted: tt.accepted, Withdrawn: tt.withdrawn, Version: 3}
		fields := map[string]string{}
		kv := stateFields(d)
		for i := 0; i < len(kv); i += 2 {
			fields[kv[i].(string)], _ = kv[i+1].(string)
		}
		if fields[fAccepted] != tt.field {
			t.Errorf("%+v is written %q, want %q", d, fields[fAccepted], tt.field)
		}
		reply := make([]any, len(driverFields))
		for i, f := range driverFields {
			reply[i] = fields[f.(string)]
		}
		reply[9] = "3" // the version, which a transition's script writes
		got, _, found, err := decodeDriver(reply)
		if err != nil || !found || got.Accepted != tt.accepted || got.Withdrawn != tt.withdrawn {
			t.Errorf("%q reads as accepted %t, withdrawn %t (%v); want %t, %t", tt.field, got.Accepted, got.Withdrawn, err, tt.accepted, tt.withdrawn)
		}
	}
}
