package geocell

import (
	"errors"
	"math"
	"testing"
	"time"
)

func mustBucketSize(t testing.TB, d time.Duration) BucketSize {
	t.Helper()
	s, err := NewBucketSize(d)
	if err != nil {
		t.Fatalf("NewBucketSize(%s): %v", d, err)
	}
	return s
}

func TestNewBucketSize(t *testing.T) {
	tests := []struct {
		d       time.Duration
		wantErr bool
	}{
		{time.Second, false},
		{time.Minute, false},
		{90 * time.Second, false},
		{24 * time.Hour, false},
		{0, true},
		{-time.Minute, true},
		{999 * time.Millisecond, true},
		{1500 * time.Millisecond, true},
		{24*time.Hour + time.Second, true},
	}
	for _, tt := range tests {
		s, err := NewBucketSize(tt.d)
		if gotErr := err != nil; gotErr != tt.wantErr {
			t.Errorf("NewBucketSize(%s) error = %v, want error %t", tt.d, err, tt.wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("NewBucketSize(%s): errors.Is(%v, ErrInvalidArgument) = false", tt.d, err)
			}
			continue
		}
		if got := s.Duration(); got != tt.d {
			t.Errorf("NewBucketSize(%s).Duration() = %s", tt.d, got)
		}
		if got, want := s.Seconds(), int64(tt.d/time.Second); got != want {
			t.Errorf("NewBucketSize(%s).Seconds() = %d, want %d", tt.d, got, want)
		}
		if got := s.String(); got != tt.d.String() {
			t.Errorf("NewBucketSize(%s).String() = %q", tt.d, got)
		}
	}
}

func TestBucket(t *testing.T) {
	minute := mustBucketSize(t, time.Minute)
	tests := []struct {
		name         string
		t            time.Time
		want         int64
		wantProgress float64
	}{
		{"epoch", time.Unix(0, 0), 0, 0},
		{"last instant of bucket 0", time.Unix(59, 999_999_999), 0, (60 - 1e-9) / 60},
		{"start of bucket 1", time.Unix(60, 0), 1, 0},
		{"half way", time.Unix(90, 0), 1, 0.5},
		{"before the epoch floors", time.Unix(-1, 0), -1, 59.0 / 60},
		{"exactly -60s", time.Unix(-60, 0), -1, 0},
		{"time zone does not matter", time.Unix(125, 0).In(time.FixedZone("X", 5*3600+1800)), 2, 5.0 / 60},
		{"a real instant", time.Date(2024, 3, 1, 12, 0, 30, 0, time.UTC), 1709294400 / 60, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bucket(tt.t, minute)
			if got != tt.want {
				t.Errorf("Bucket(%s) = %d, want %d", tt.t, got, tt.want)
			}
			start := BucketStart(got, minute)
			if start.After(tt.t) || !tt.t.Before(start.Add(time.Minute)) {
				t.Errorf("BucketStart(%d) = %s, does not hold %s", got, start, tt.t)
			}
			if p := BucketProgress(tt.t, minute); math.Abs(p-tt.wantProgress) > 1e-12 {
				t.Errorf("BucketProgress(%s) = %v, want %v", tt.t, p, tt.wantProgress)
			}
		})
	}
}

func TestBucketStartIsUTC(t *testing.T) {
	s := mustBucketSize(t, time.Hour)
	if got := BucketStart(5, s); got.Location() != time.UTC || !got.Equal(time.Unix(5*3600, 0)) {
		t.Errorf("BucketStart(5, 1h) = %s, want %s in UTC", got, time.Unix(5*3600, 0).UTC())
	}
}

func TestBucketProgressStaysBelowOne(t *testing.T) {
	day := mustBucketSize(t, 24*time.Hour)
	last := time.Unix(86400-1, 999_999_999)
	if p := BucketProgress(last, day); p >= 1 || p < 0.99999 {
		t.Errorf("BucketProgress(last ns of a day) = %v, want just below 1", p)
	}
}

func TestZeroBucketSizePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Bucket with a zero BucketSize did not panic")
		}
	}()
	Bucket(time.Unix(0, 0), BucketSize{})
}
