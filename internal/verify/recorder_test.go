package verify

import (
	"errors"
	"testing"
)

func TestAnAnswerProvesWhatItSays(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kind       Kind
		status     int
		notApplied bool
		err        error
		want       Outcome
	}{
		{"a write answered", Heartbeat, 200, false, nil, OK},
		{"a write refused by the API", Heartbeat, 409, false, nil, Failed},
		{"a write's 503: may have happened", Heartbeat, 503, false, nil, Unknown},
		{"a write's 503 saying nothing was done", Heartbeat, 503, true, nil, Failed},
		{"a write's 500 saying nothing was done", CreateBooking, 500, true, nil, Failed},
		{"a write without an answer", DriverEvent, 0, false, errors.New("timeout"), Unknown},
		{"a read that failed", ReadDriver, 503, false, nil, Failed},
		{"a read of nothing", ReadDriver, 404, false, nil, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcomeOf(tc.kind, tc.status, tc.notApplied, tc.err); got != tc.want {
				t.Errorf("outcomeOf(%s, %d, not applied %v, %v) = %s, want %s", tc.kind, tc.status, tc.notApplied, tc.err, got, tc.want)
			}
		})
	}
}
