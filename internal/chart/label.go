package chart

import "fmt"

// Ms labels a duration in milliseconds: "12 ms", then "1.5 s" from a
// second up, so that a log axis reads without counting zeros.
func Ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%g s", v/1000)
	}
	return fmt.Sprintf("%g ms", v)
}

// Percent labels a share from 0 to 1 as a whole percentage: 0.5 is "50%".
func Percent(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
