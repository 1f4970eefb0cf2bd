package spampede

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
)

// Rule sets the filter for one city (a bounding box) and some services.
type Rule struct {
	Name     string   `json:"name"`
	MinLat   float64  `json:"min_lat"`
	MaxLat   float64  `json:"max_lat"`
	MinLng   float64  `json:"min_lng"`
	MaxLng   float64  `json:"max_lng"`
	Services []string `json:"services,omitempty"` // empty: every service
	// CellBits is the geohash precision of a cell: 30 bits ≈ 1.2 km × 0.6 km.
	CellBits uint `json:"cell_bits"`
	// BucketSeconds is the length of a time bucket.
	BucketSeconds int `json:"bucket_seconds"`
	// Threshold is the unallocated bookings in a cell's 3 × 3 block, over
	// the last bucket-length, at which the cell trips.
	Threshold int `json:"threshold"`
	// HoldDownSeconds keeps a tripped cell tripped at least this long.
	HoldDownSeconds int `json:"hold_down_seconds"`
	// Shadow rules count what they would reject, and admit.
	Shadow bool `json:"shadow"`
}

// same reports whether r and o are the same rule, field by field (no
// services and an empty list alike). TestRuleSameSeesEveryField keeps it
// to every field. Cheap: it runs on every cached rejection of a storm.
func (r Rule) same(o Rule) bool {
	return r.Name == o.Name && r.MinLat == o.MinLat && r.MaxLat == o.MaxLat && r.MinLng == o.MinLng && r.MaxLng == o.MaxLng &&
		slices.Equal(r.Services, o.Services) && r.CellBits == o.CellBits && r.BucketSeconds == o.BucketSeconds &&
		r.Threshold == o.Threshold && r.HoldDownSeconds == o.HoldDownSeconds && r.Shadow == o.Shadow
}

// RuleSet is the whole configuration, stored and edited as one JSON document.
type RuleSet struct {
	Version int64  `json:"version"`
	Rules   []Rule `json:"rules"`
}

// DefaultRuleSet covers Singapore, every service.
func DefaultRuleSet() RuleSet {
	return RuleSet{Version: 1, Rules: []Rule{{Name: "singapore", MinLat: 1.15, MaxLat: 1.50, MinLng: 103.55, MaxLng: 104.10,
		CellBits: 30, BucketSeconds: 60, Threshold: 20, HoldDownSeconds: 60}}}
}

// ParseRuleSet decodes and validates a rule set.
func ParseRuleSet(b []byte) (RuleSet, error) {
	var rs RuleSet
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		return rs, fmt.Errorf("%w: rules: %v", driver.ErrInvalidArgument, err)
	}
	return rs, rs.Validate()
}

// Validate reports every invalid rule.
func (rs RuleSet) Validate() error {
	var errs []error
	if len(rs.Rules) > 1000 {
		errs = append(errs, errors.New("at most 1000 rules"))
	}
	names := map[string]bool{}
	for i, r := range rs.Rules {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rule %d (%q): %w", i, r.Name, err))
		}
		if names[r.Name] {
			errs = append(errs, fmt.Errorf("rule %d: duplicate name %q", i, r.Name))
		}
		names[r.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", driver.ErrInvalidArgument, err)
	}
	return nil
}

// Validate reports what is wrong with r.
func (r Rule) Validate() error {
	var errs []error
	if r.Name == "" || len(r.Name) > 64 {
		errs = append(errs, errors.New("name must be 1 to 64 characters"))
	}
	for _, v := range []float64{r.MinLat, r.MaxLat, r.MinLng, r.MaxLng} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, errors.New("box coordinates must be finite"))
		}
	}
	if err := driver.ValidateLocation(r.MinLat, r.MinLng); err != nil {
		errs = append(errs, err)
	}
	if err := driver.ValidateLocation(r.MaxLat, r.MaxLng); err != nil {
		errs = append(errs, err)
	}
	if r.MinLat >= r.MaxLat || r.MinLng >= r.MaxLng {
		errs = append(errs, errors.New("box must have min < max"))
	}
	for _, s := range r.Services {
		if err := driver.ValidateService(s); err != nil {
			errs = append(errs, err)
		}
	}
	if r.CellBits < 10 || r.CellBits > 40 {
		errs = append(errs, fmt.Errorf("cell_bits must be within [10, 40], got %d", r.CellBits))
	}
	if r.BucketSeconds < 1 || r.BucketSeconds > 3600 {
		errs = append(errs, fmt.Errorf("bucket_seconds must be within [1, 3600], got %d", r.BucketSeconds))
	}
	if r.Threshold < 1 {
		errs = append(errs, fmt.Errorf("threshold must be at least 1, got %d", r.Threshold))
	}
	if r.HoldDownSeconds < 0 || r.HoldDownSeconds > 3600 {
		errs = append(errs, fmt.Errorf("hold_down_seconds must be within [0, 3600], got %d", r.HoldDownSeconds))
	}
	return errors.Join(errs...)
}

// Match returns the first rule covering the pickup and service.
func (rs RuleSet) Match(service string, lat, lng float64) (Rule, bool) {
	for _, r := range rs.Rules {
		if lat >= r.MinLat && lat <= r.MaxLat && lng >= r.MinLng && lng <= r.MaxLng &&
			(len(r.Services) == 0 || slices.Contains(r.Services, service)) {
			return r, true
		}
	}
	return Rule{}, false
}

// has reports whether r is one of the set's rules, as it is written.
func (rs RuleSet) has(r Rule) bool {
	return slices.ContainsFunc(rs.Rules, r.same)
}

func (r Rule) bucketSize() geocell.BucketSize {
	bs, _ := geocell.NewBucketSize(time.Duration(r.BucketSeconds) * time.Second)
	return bs
}

func (r Rule) holdDown() time.Duration { return time.Duration(r.HoldDownSeconds) * time.Second }
