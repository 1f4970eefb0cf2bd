package driver

import "strings"

// Status is where a driver is in the state machine (see the package doc).
// The zero Status is not valid: a driver never seen before is StatusOffline.
type Status string

// The driver statuses. Their strings are stored and sent over the wire.
const (
	StatusOffline   Status = "offline"
	StatusAvailable Status = "available"
	StatusReserved  Status = "reserved"
	StatusOnTrip    Status = "on_trip"
)

// Statuses returns every valid Status, in state-machine order.
func Statuses() []Status {
	return []Status{StatusOffline, StatusAvailable, StatusReserved, StatusOnTrip}
}

// ParseStatus returns the Status named s, or an *InvalidArgumentError.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses() {
		if string(st) == s {
			return st, nil
		}
	}
	return "", unknownValue("status", s, Statuses())
}

// String returns the status name.
func (s Status) String() string { return string(s) }

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText implements encoding.TextUnmarshaler, so decoding JSON
// validates through ParseStatus.
func (s *Status) UnmarshalText(text []byte) error {
	st, err := ParseStatus(string(text))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// unknownValue builds the error for a name that is not one of valid.
func unknownValue[T ~string](field, got string, valid []T) error {
	names := make([]string, len(valid))
	for i, v := range valid {
		names[i] = string(v)
	}
	// %.32q: never echo an arbitrarily long input back to a client.
	return invalidArg(field, "must be one of %s, got %.32q", strings.Join(names, ", "), got)
}
