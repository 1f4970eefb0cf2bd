package geocell

import (
	"errors"
	"math"
	"testing"
	"time"
)

func FuzzOf(f *testing.F) {
	f.Add(1.3521, 103.8198, uint8(30), uint8(26))
	f.Add(90.0, 180.0, uint8(52), uint8(1))
	f.Add(-90.0, -180.0, uint8(1), uint8(0))
	f.Add(math.Nextafter(0, -1), math.Nextafter(0, 1), uint8(51), uint8(50))
	f.Add(0.0, 0.0, uint8(53), uint8(3))
	f.Add(math.NaN(), 0.0, uint8(20), uint8(3))
	f.Fuzz(func(t *testing.T, lat, lng float64, bits, reduceTo uint8) {
		c, err := Of(lat, lng, uint(bits))
		valid := !math.IsNaN(lat) && !math.IsNaN(lng) && lat >= -90 && lat <= 90 && lng >= -180 && lng <= 180 &&
			uint(bits) >= MinBits && uint(bits) <= MaxBits
		if err != nil {
			if valid {
				t.Fatalf("Of(%v, %v, %d) = %v on valid input", lat, lng, bits, err)
			}
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Of error %v does not match ErrInvalidArgument", err)
			}
			return
		}
		if !valid {
			t.Fatalf("Of(%v, %v, %d) = %v, nil on invalid input", lat, lng, bits, c)
		}
		if c.Bits() != uint(bits) || c.Hash()>>c.Bits() != 0 {
			t.Fatalf("Of(%v, %v, %d) = %v: wrong precision or hash too wide", lat, lng, bits, c)
		}
		if b := c.Bounds(); !b.Contains(lat, lng) {
			t.Fatalf("Of(%v, %v, %d) = %v with bounds %+v not containing the point", lat, lng, bits, c, b)
		}
		if clat, clng := c.Center(); !c.Bounds().Contains(clat, clng) {
			t.Fatalf("%v.Center() = (%v, %v) outside its bounds", c, clat, clng)
		}

		// Reduce: idempotent, monotone, and the same as encoding coarser.
		r := c.Reduce(uint(reduceTo))
		if r.Reduce(uint(reduceTo)) != r {
			t.Fatalf("Reduce(%d) not idempotent: %v then %v", reduceTo, r, r.Reduce(uint(reduceTo)))
		}
		if r.Bits() > c.Bits() || r.Bits() < MinBits {
			t.Fatalf("%v.Reduce(%d) = %v: precision out of range", c, reduceTo, r)
		}
		for _, k := range []uint{r.Bits(), r.Bits() / 2, 1} {
			if got, want := r.Reduce(k), c.Reduce(min(k, r.Bits())); got != want {
				t.Fatalf("%v.Reduce(%d).Reduce(%d) = %v, want %v", c, reduceTo, k, got, want)
			}
		}
		if rb, cb := r.Bounds(), c.Bounds(); !rb.Contains(cb.MinLat, cb.MinLng) || !rb.Contains(cb.MaxLat, cb.MaxLng) {
			t.Fatalf("%v %+v is not inside its reduction %v %+v", c, cb, r, rb)
		}
		if want, _ := Of(lat, lng, r.Bits()); r != want {
			// Allowed only where the point sits exactly on the reduced cell's
			// edge: both cells then contain it.
			if !want.Bounds().Contains(lat, lng) || !r.Bounds().Contains(lat, lng) {
				t.Fatalf("%v.Reduce(%d) = %v, Of at that precision = %v", c, reduceTo, r, want)
			}
		}

		if got, err := ParseCell(c.String()); err != nil || got != c {
			t.Fatalf("ParseCell(%q) = %v, %v; want %v", c.String(), got, err, c)
		}
		for _, n := range c.Neighbors() {
			if n == c || n.Bits() != c.Bits() {
				t.Fatalf("%v.Neighbors() has %v", c, n)
			}
		}
	})
}

func FuzzParseCell(f *testing.F) {
	for _, s := range []string{"26:12345678", "1:1", "52:4503599627370495", "0:0", "026:1", "26:", ":", "1:2", "52:18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCell(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParseCell(%q) error %v does not match ErrInvalidArgument", s, err)
			}
			return
		}
		if got := c.String(); got != s {
			t.Fatalf("ParseCell(%q).String() = %q", s, got)
		}
		if c.Bits() < MinBits || c.Bits() > MaxBits || c.Hash()>>c.Bits() != 0 {
			t.Fatalf("ParseCell(%q) = invalid cell %v", s, c)
		}
		// A parsed cell behaves like any other: its centre maps back to it.
		lat, lng := c.Center()
		if back, err := Of(lat, lng, c.Bits()); err != nil || back != c {
			t.Fatalf("Of(%v.Center()) = %v, %v", c, back, err)
		}
	})
}

func FuzzBucket(f *testing.F) {
	f.Add(int64(0), int64(0), int64(60))
	f.Add(int64(-1), int64(999_999_999), int64(60))
	f.Add(int64(1709294445), int64(5), int64(86400))
	f.Fuzz(func(t *testing.T, sec, nsec, sizeSecs int64) {
		sec %= 1 << 40 // about ±35,000 years
		nsec = (nsec%1e9 + 1e9) % 1e9
		size, err := NewBucketSize(time.Duration(sizeSecs) * time.Second)
		if err != nil {
			return
		}
		now := time.Unix(sec, nsec)
		b := Bucket(now, size)
		start := BucketStart(b, size)
		if start.After(now) || !now.Before(start.Add(size.Duration())) {
			t.Fatalf("bucket %d [%s, +%s) does not hold %s", b, start, size, now)
		}
		if p := BucketProgress(now, size); p < 0 || p >= 1 {
			t.Fatalf("BucketProgress(%s, %s) = %v, want [0, 1)", now, size, p)
		}
	})
}

func FuzzCellsWithin(f *testing.F) {
	f.Add(1.3521, 103.8198, 1000.0, uint8(30))
	f.Add(89.9, 179.9, 50000.0, uint8(12))
	f.Add(0.0, -180.0, 0.0, uint8(52))
	f.Fuzz(func(t *testing.T, lat, lng, radius float64, bits uint8) {
		cells, err := CellsWithin(lat, lng, radius, uint(bits))
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("CellsWithin error %v does not match ErrInvalidArgument", err)
			}
			return
		}
		if centre, _ := Of(lat, lng, uint(bits)); len(cells) == 0 || cells[0] != centre {
			t.Fatalf("CellsWithin(%v, %v, %v, %d) = %v, want %v first", lat, lng, radius, bits, cells, centre)
		}
		if len(cells) > MaxCellsWithin {
			t.Fatalf("CellsWithin returned %d cells, more than %d", len(cells), MaxCellsWithin)
		}
	})
}
