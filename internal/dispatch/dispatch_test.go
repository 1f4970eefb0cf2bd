package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

type fakeFinder []Candidate

func (f fakeFinder) Find(context.Context, string, driver.Location, float64, int, time.Time) ([]Candidate, error) {
	return f, nil
}

type fakeReserver map[string]error

func (f fakeReserver) Reserve(_ context.Context, id, _ string, _, _ time.Time) error { return f[id] }

func TestAllocateTakesTheNearestDriverStillAvailable(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name    string
		cands   fakeFinder
		reserve fakeReserver
		want    string
		wantErr error
	}{
		{"nearest wins", fakeFinder{{"a", 10}, {"b", 20}}, fakeReserver{}, "a", nil},
		{"taken drivers are skipped", fakeFinder{{"a", 10}, {"b", 20}}, fakeReserver{"a": &driver.TransitionError{}}, "b", nil},
		{"conflicts are skipped", fakeFinder{{"a", 10}, {"b", 20}}, fakeReserver{"a": ErrTaken}, "b", nil},
		{"nobody left", fakeFinder{{"a", 10}}, fakeReserver{"a": ErrTaken}, "", ErrNoDriver},
		{"nobody near", fakeFinder{}, fakeReserver{}, "", ErrNoDriver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := New(DefaultConfig(), tt.cands, tt.reserve)
			got, until, err := a.Allocate(context.Background(), "bk", "car", driver.Location{}, now)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Allocate = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if err == nil && !until.Equal(now.Add(DefaultConfig().ReservationTTL)) {
				t.Errorf("reserved until %s", until)
			}
		})
	}
}

func TestAllocateReturnsStorageFailures(t *testing.T) {
	boom := errors.New("redis down")
	a, _ := New(DefaultConfig(), fakeFinder{{"a", 1}}, fakeReserver{"a": boom})
	if _, _, err := a.Allocate(context.Background(), "bk", "car", driver.Location{}, time.Now()); !errors.Is(err, boom) {
		t.Fatalf("Allocate = %v, want the storage error", err)
	}
}

// partialFinder found cands but could not read everything: err.
type partialFinder struct {
	cands []Candidate
	err   error
}

func (f partialFinder) Find(context.Context, string, driver.Location, float64, int, time.Time) ([]Candidate, error) {
	return f.cands, f.err
}

func TestASearchThatCouldNotSeeEverythingIsNeverNoDriver(t *testing.T) {
	unread := errors.New("a cell could not be read")
	tests := []struct {
		name    string
		cands   []Candidate
		reserve fakeReserver
		want    string
		wantErr error
	}{
		{"a driver it found is reserved", []Candidate{{"a", 10}}, fakeReserver{}, "a", nil},
		{"the drivers it found are taken", []Candidate{{"a", 10}}, fakeReserver{"a": ErrTaken}, "", unread},
		{"it found nobody", nil, fakeReserver{}, "", unread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := New(DefaultConfig(), partialFinder{tt.cands, unread}, tt.reserve)
			got, _, err := a.Allocate(context.Background(), "bk", "car", driver.Location{}, time.Unix(1000, 0))
			if got != tt.want || !errors.Is(err, tt.wantErr) || errors.Is(err, ErrNoDriver) {
				t.Fatalf("Allocate = %q, %v; want %q, %v (never ErrNoDriver)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
