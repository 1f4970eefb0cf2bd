package console

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// A not-ready reason is announced as its first line, bounded, and never
// cut inside a character.
func TestAReasonIsItsFirstLineBounded(t *testing.T) {
	long := strings.Repeat("é", maxReason) // two bytes each
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"short", errors.New("draining"), "draining"},
		{"first line", errors.Join(errors.New("no Redis shard answers: shard 0: i/o timeout"), errors.New("shard 1: i/o timeout")), "no Redis shard answers: shard 0: i/o timeout"},
		{"long", errors.New(long), long[:maxReason] + "…"},
		{"long, odd cut", errors.New("x" + long), "x" + long[:maxReason-2] + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reason(tt.err)
			if got != tt.want || !utf8.ValidString(got) || len(got) > maxReason+len("…") {
				t.Errorf("reason = %q (%d bytes), want %q", got, len(got), tt.want)
			}
		})
	}
}
