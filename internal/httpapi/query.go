package httpapi

import (
	"math"
	"net/url"
	"slices"
	"strconv"
)

// queryParams is a strictly parsed query string: malformed escapes,
// unknown parameters and repeated parameters are errors rather than
// silently dropped or picked from, so a typo such as "radius=" is reported
// instead of quietly falling back to a default.
type queryParams url.Values

func parseQuery(raw string, allowed ...string) (queryParams, error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("query", "is not a valid query string")
	}
	for name, vs := range values {
		if !slices.Contains(allowed, name) {
			return nil, invalid("query", "has unknown parameter %.32q", name)
		}
		if len(vs) > 1 {
			return nil, invalid(name, "must be given once")
		}
	}
	return queryParams(values), nil
}

// lookup returns the parameter's value and whether it was given at all; a
// parameter given empty ("lat=") counts as given, and then fails to parse.
func (q queryParams) lookup(name string) (string, bool) {
	vs, ok := q[name]
	if !ok {
		return "", false
	}
	return vs[0], true
}

// float returns a required finite number.
func (q queryParams) float(name string) (float64, error) {
	s, ok := q.lookup(name)
	if !ok {
		return 0, invalid(name, "is required")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, invalid(name, "must be a finite number")
	}
	return f, nil
}

// floatOr returns an optional finite number, def when absent.
func (q queryParams) floatOr(name string, def float64) (float64, error) {
	if _, ok := q.lookup(name); !ok {
		return def, nil
	}
	return q.float(name)
}

// intOr returns an optional integer, def when absent.
func (q queryParams) intOr(name string, def int) (int, error) {
	s, ok := q.lookup(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, invalid(name, "must be an integer")
	}
	return n, nil
}

// text returns a required string.
func (q queryParams) text(name string) (string, error) {
	s, ok := q.lookup(name)
	if !ok {
		return "", invalid(name, "is required")
	}
	return s, nil
}
