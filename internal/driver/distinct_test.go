package driver

import (
	"fmt"
	"slices"
	"testing"
)

func TestDistinctKeepsTheFirstOfEachID(t *testing.T) {
	many := make([]string, 0, 200)
	for i := range 100 {
		many = append(many, fmt.Sprintf("d-%d", i))
	}
	tests := []struct {
		name string
		ids  []string
		want []string
	}{
		{"none", nil, nil},
		{"one", []string{"a"}, []string{"a"}},
		{"no repeats", []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"repeats", []string{"b", "a", "b", "c", "a"}, []string{"b", "a", "c"}},
		{"all the same", []string{"a", "a", "a"}, []string{"a"}},
		{"many, no repeats", many, many},
		{"many, repeated", append(append([]string(nil), many...), many...), many},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Distinct(tt.ids); !slices.Equal(got, tt.want) {
				t.Errorf("Distinct(%q) = %q, want %q", tt.ids, got, tt.want)
			}
		})
	}
}
