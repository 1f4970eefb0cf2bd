package redisroute

import (
	"errors"
	"strings"
	"testing"
)

// A denial is named by what Redis says was denied, in the words of
// Redis 7.0 and of 7.2 and later (and Valkey), which differ for keys and
// channels: a denied key must not be named as a denied command, whose
// grant (+set) the user already has.
func TestDeniedNameTellsKeysAndChannelsFromCommands(t *testing.T) {
	set := Right{"SET", rightsKey, "1"}
	tests := []struct {
		reply string
		want  string
	}{
		{"NOPERM this user has no permissions to run the 'set' command", "set"},
		{"NOPERM User apollo has no permissions to run the 'set' command", "set"},
		{"NOPERM this user has no permissions to access one of the keys used as arguments", "set (keys)"},
		{"NOPERM No permissions to access a key", "set (keys)"},
		{"NOPERM this user has no permissions to access one of the channels used as arguments", "set (channels)"},
		{"NOPERM No permissions to access a channel", "set (channels)"},
	}
	for _, tt := range tests {
		if got := deniedName(set, errors.New(tt.reply)); got != tt.want {
			t.Errorf("%q names %q, want %q", tt.reply, got, tt.want)
		}
	}
}

func TestGrantsGiveWhatWasDenied(t *testing.T) {
	got := Grants([]string{"info", "set (keys)", "get (keys)", "spublish (channels)", "cluster|slots"})
	want := "+info ~apollo:* &apollo:* +cluster|slots"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("Grants = %q, want %q", s, want)
	}
}
