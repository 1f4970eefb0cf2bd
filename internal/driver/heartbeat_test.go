package driver

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestHeartbeat(t *testing.T) {
	d := inStatus(StatusReserved, false) // LastHeartbeat t0-1s, Version 7
	here := Location{Lat: 1.31, Lng: 103.81}
	tests := []struct {
		name    string
		loc     Location
		now     time.Time
		want    func(Driver) Driver
		wantErr error
	}{
		{"newer moves the driver", here, t0, func(d Driver) Driver {
			d.Location, d.LastHeartbeat = here, t0
			return d
		}, nil},
		{"same instant is accepted", here, t0.Add(-time.Second), func(d Driver) Driver {
			d.Location = here
			return d
		}, nil},
		{"older is ignored", here, t0.Add(-time.Minute), func(d Driver) Driver { return d }, nil},
		{"bad location", Location{Lat: 100}, t0, func(d Driver) Driver { return d }, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Heartbeat(d, tt.loc, tt.now)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Heartbeat error = %v, want %v", err, tt.wantErr)
			}
			if want := tt.want(d); !reflect.DeepEqual(got, want) {
				t.Errorf("Heartbeat =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}
