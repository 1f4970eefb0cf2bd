package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// FuzzAppendJSONIsMarshal pins the batch response's own encoder to
// encoding/json: the same bytes for any driver, or an error from both.
func FuzzAppendJSONIsMarshal(f *testing.F) {
	f.Add("d-1", "car", "available", "", 1.3, 103.8, int64(1764650000123456789), int64(0), true, int64(7), "gone", false)
	f.Add("<&>\u2028\"\\\x00\x1f\n\t", "\xff\xfe", "on\u2029", "b<1>", 1e-7, -1e21, int64(-62135596800), int64(253402300800), false, int64(-1), "\b\f\r", true)
	f.Add("<&>\u2028", "é\xc3", "\u2029\x7f", "", 1e-7, 123456789e13, int64(5), int64(1764650000), false, int64(0), "\b\f\r", true)
	f.Add("z", "z", "z", "", 2.5, 2.5, int64(9), int64(24*3600+7), false, int64(0), "", false)
	f.Add("", "", "", "x", 0.0, math.Copysign(0, -1), int64(1), int64(-1), true, int64(math.MaxInt64), "", false)
	f.Fuzz(func(t *testing.T, id, service, status, bookingID string, lat, lng float64, beat, until int64, accepted bool, version int64, missing string, nilServices bool) {
		d := driverJSON{ID: id, Services: []string{service, id}, Status: driver.Status(status),
			Location: locationJSON{Lat: lat, Lng: lng}, BookingID: bookingID, Accepted: accepted, Version: version, Available: !accepted,
			Withdrawn: !accepted && version%2 == 0} // (from the other inputs: the corpus keeps its shape)
		if nilServices {
			d.Services = nil
		}
		if beat != 0 {
			d.LastHeartbeat = time.Unix(0, beat).UTC()
		}
		if until != 0 {
			// Seconds, so that a year past 9999 is in reach, and a zone
			// offset of up to ±27 hours from them.
			zone := time.FixedZone("x", int(until%(27*3600)))
			d.ReservedUntil = time.Unix(until, until%1e9).In(zone)
		}
		// Strings alone, so that a value that fails as a whole (a year
		// past 9999) leaves none unchecked.
		for _, s := range []string{id, service, status, bookingID, missing} {
			want, _ := json.Marshal(s)
			if got := appendString(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("appendString(%q) = %s, json.Marshal gives %s", s, got, want)
			}
		}
		for _, x := range []float64{lat, lng} {
			want, wantErr := json.Marshal(x)
			got, gotErr := appendFloat(nil, x)
			if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("appendFloat(%v) = %s, %v; json.Marshal gives %s, %v", x, got, gotErr, want, wantErr)
			}
		}
		for _, v := range []any{
			d,
			batchResponse{Drivers: []driverJSON{d, d}, Missing: []string{missing}, Failed: []failureJSON{{ID: missing, Error: errorJSON{Code: "unavailable", Message: status}}}},
			batchResponse{Drivers: []driverJSON{}, Missing: []string{}, Failed: []failureJSON{}},
			batchResponse{},
		} {
			want, wantErr := json.Marshal(v)
			got, gotErr := marshal(v)
			if (wantErr != nil) != (gotErr != nil) {
				t.Fatalf("json.Marshal error %v, appendJSON error %v", wantErr, gotErr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("appendJSON gave\n%s\njson.Marshal gives\n%s", got, want)
			}
		}
	})
}

func BenchmarkBatchResponseEncoding(b *testing.B) {
	now := time.Now()
	resp := batchResponse{Missing: []string{}, Failed: []failureJSON{}}
	for range 20 {
		resp.Drivers = append(resp.Drivers, driverJSON{ID: "bench-0001", Services: []string{"car"}, Status: driver.StatusAvailable,
			Location: locationJSON{Lat: 1.3, Lng: 103.8}, LastHeartbeat: now, Version: 3, Available: true})
	}
	for _, enc := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"encoding-json", json.Marshal}, {"append", marshal}} {
		b.Run(enc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := enc.fn(resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
