package geocell

import (
	"math"
	"time"
)

// Limits for a BucketSize. A bucket longer than a day would make a demand
// spike invisible, and the cap keeps bucket arithmetic far from overflow.
const (
	MinBucketSize = time.Second
	MaxBucketSize = 24 * time.Hour
)

// BucketSize is a validated time-bucket length: a whole number of seconds
// in [MinBucketSize, MaxBucketSize]. Make one with NewBucketSize. The zero
// BucketSize is invalid and the bucket functions panic on it, as integer
// division by zero would.
type BucketSize struct {
	secs int64
}

// NewBucketSize validates d as a bucket length.
func NewBucketSize(d time.Duration) (BucketSize, error) {
	if d < MinBucketSize || d > MaxBucketSize || d%time.Second != 0 {
		return BucketSize{}, invalidf("bucket size must be a whole number of seconds within [%s, %s], got %s",
			MinBucketSize, MaxBucketSize, d)
	}
	return BucketSize{secs: int64(d / time.Second)}, nil
}

// Duration returns the bucket length.
func (s BucketSize) Duration() time.Duration { return time.Duration(s.seconds()) * time.Second }

// Seconds returns the bucket length in whole seconds, e.g. for a Redis TTL.
func (s BucketSize) Seconds() int64 { return s.seconds() }

// String returns the bucket length like time.Duration does, e.g. "1m0s".
func (s BucketSize) String() string { return s.Duration().String() }

func (s BucketSize) seconds() int64 {
	if s.secs == 0 {
		panic("geocell: zero BucketSize; make one with NewBucketSize")
	}
	return s.secs
}

// Bucket returns the number of the bucket containing t:
// floor(unix seconds / size). It floors, so instants before 1970 land in
// the bucket that starts at or before them.
func Bucket(t time.Time, size BucketSize) int64 {
	secs := size.seconds()
	u := t.Unix()
	b := u / secs
	if u%secs < 0 {
		b--
	}
	return b
}

// BucketStart returns the first instant of bucket b, in UTC.
func BucketStart(b int64, size BucketSize) time.Time {
	return time.Unix(b*size.seconds(), 0).UTC()
}

// BucketProgress returns how far t is into its bucket, in [0, 1).
//
// A counter per bucket drops to zero at every boundary. Estimating the
// rate over the last full bucket length as
//
//	current + previous*(1 - BucketProgress(now, size))
//
// removes that cliff at the cost of one extra read, instead of keeping a
// true sliding window.
func BucketProgress(t time.Time, size BucketSize) float64 {
	secs := size.seconds()
	into := t.Unix() - Bucket(t, size)*secs // whole seconds, in [0, secs)
	p := (float64(into) + float64(t.Nanosecond())/1e9) / float64(secs)
	// Rounding can reach 1 in the last nanosecond of a long bucket; the
	// contract is a half-open interval.
	return min(p, math.Nextafter(1, 0))
}
