package driver

import "math"

// Limits on identifiers and service lists. IDs end up inside Redis keys and
// log lines, so they are short and free of spaces, braces and quotes.
const (
	MaxIDLen        = 64
	MaxServiceLen   = 32
	MaxServices     = 16
	idCharsDoc      = "[A-Za-z0-9_-:.]"
	serviceCharsDoc = "[a-z0-9_]"
)

// ValidateID checks a driver or booking ID: 1 to 64 characters from
// [A-Za-z0-9_-:.]. Braces are excluded on purpose: an ID must never open a
// Redis hash tag.
func ValidateID(id string) error { return validateID("id", id) }

func validateID(field, id string) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return invalidArg(field, "must be 1 to %d characters from %s", MaxIDLen, idCharsDoc)
	}
	for i := 0; i < len(id); i++ {
		if !IsIDChar(id[i]) {
			return invalidArg(field, "must be 1 to %d characters from %s", MaxIDLen, idCharsDoc)
		}
	}
	return nil
}

// IsIDChar reports whether c may appear in an id: [A-Za-z0-9_:.-].
func IsIDChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == ':' || c == '.'
}

// ValidateService checks a service name: 1 to 32 characters from [a-z0-9_].
func ValidateService(s string) error {
	if len(s) == 0 || len(s) > MaxServiceLen {
		return invalidArg("service", "must be 1 to %d characters from %s", MaxServiceLen, serviceCharsDoc)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return invalidArg("service", "must be 1 to %d characters from %s", MaxServiceLen, serviceCharsDoc)
		}
	}
	return nil
}

// ValidateServices checks the list a driver goes online with: 1 to 16
// valid, distinct services. Its errors match both ErrInvalidServices and
// ErrInvalidArgument.
func ValidateServices(services []string) error {
	fail := func(format string, args ...any) error {
		e := invalidArg("services", format, args...)
		e.Err = ErrInvalidServices
		return e
	}
	if len(services) == 0 || len(services) > MaxServices {
		return fail("must list 1 to %d services", MaxServices)
	}
	for i, s := range services {
		if err := ValidateService(s); err != nil {
			return fail("must be 1 to %d characters from %s each, got %.32q", MaxServiceLen, serviceCharsDoc, s)
		}
		for _, earlier := range services[:i] {
			if s == earlier {
				return fail("must not repeat %q", s)
			}
		}
	}
	return nil
}

// ValidateLocation checks that lat and lng are finite, lat is within
// [-90, 90] and lng within [-180, 180].
func ValidateLocation(lat, lng float64) error {
	switch {
	case math.IsNaN(lat) || math.IsInf(lat, 0):
		return invalidArg("lat", "must be a finite number")
	case math.IsNaN(lng) || math.IsInf(lng, 0):
		return invalidArg("lng", "must be a finite number")
	case lat < -90 || lat > 90:
		return invalidArg("lat", "must be within [-90, 90]")
	case lng < -180 || lng > 180:
		return invalidArg("lng", "must be within [-180, 180]")
	}
	return nil
}
