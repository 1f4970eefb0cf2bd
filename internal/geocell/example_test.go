package geocell_test

import (
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/geocell"
)

func ExampleOf() {
	// A pickup in Singapore, at the 30-bit precision (about 0.6 × 1.2 km).
	c, err := geocell.Of(1.3521, 103.8198, 30)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	fmt.Println(c.Reduce(26)) // the enclosing 2.4 × 4.9 km cell

	_, err = geocell.Of(91, 0, 30)
	fmt.Println(err)
	// Output:
	// 30:941686166
	// 26:58855385
	// lat must be within [-90, 90]
}

func ExampleParseCell() {
	c, err := geocell.ParseCell("26:58855385")
	fmt.Println(c.Bits(), c.Hash(), err)

	_, err = geocell.ParseCell("26:058855385")
	fmt.Println(err)
	// Output:
	// 26 58855385 <nil>
	// cell "26:058855385" is not in canonical form "26:58855385"
}

func ExampleCellsWithin() {
	// Everything within 1 km of a pickup: the pickup's own cell first.
	cells, err := geocell.CellsWithin(1.3521, 103.8198, 1000, 30)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(cells), cells[0])
	// Output:
	// 8 30:941686166
}

func ExampleBucketProgress() {
	size, err := geocell.NewBucketSize(time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2024, 3, 1, 12, 0, 45, 0, time.UTC)
	cur := geocell.Bucket(now, size)
	fmt.Println(cur, geocell.BucketStart(cur, size))

	// Smooth the reset at the bucket boundary: count the previous bucket
	// for the part of the window that still overlaps it.
	prevCount, curCount := 40.0, 12.0
	p := geocell.BucketProgress(now, size)
	fmt.Printf("progress %.2f, estimate %.0f\n", p, curCount+prevCount*(1-p))
	// Output:
	// 28488240 2024-03-01 12:00:00 +0000 UTC
	// progress 0.75, estimate 22
}
