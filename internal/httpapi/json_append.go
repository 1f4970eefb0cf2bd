package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// The batch read's response encodes itself without reflection: through
// encoding/json it was a sixth of the server's CPU per call. The output
// is byte for byte what json.Marshal gives with Go 1.27's encoding/json
// (FuzzAppendJSONIsMarshal), so a client cannot tell; what it cannot
// encode (a NaN, a year past 9999) fails as json.Marshal fails.

// marshal is json.Marshal, through appendJSON for the types that have
// their own. Named, not asserted as an interface: a type that embeds one
// of them (nearbyDriverJSON) has the method too, but more fields.
func marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case batchResponse:
		return v.appendJSON(nil)
	case driverJSON:
		return v.appendJSON(nil)
	}
	return json.Marshal(v)
}

func (r batchResponse) appendJSON(b []byte) ([]byte, error) {
	// Room for the usual driver, and for writeBody's newline.
	if need := 64 + 300*len(r.Drivers); cap(b)-len(b) < need {
		b = append(make([]byte, 0, len(b)+need), b...)
	}
	b = append(b, `{"drivers":`...)
	b, err := appendDrivers(b, r.Drivers)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"missing":`...)
	b = appendStrings(b, r.Missing)
	b = append(b, `,"failed":`...)
	if r.Failed != nil && len(r.Failed) == 0 { // the usual answer
		return append(b, "[]}"...), nil
	}
	// Failures are few and rare: encoding/json's own encoding of them.
	f, err := json.Marshal(r.Failed)
	if err != nil {
		return nil, err
	}
	return append(append(b, f...), '}'), nil
}

func appendDrivers(b []byte, ds []driverJSON) ([]byte, error) {
	if ds == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = ds[i].appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendJSON follows driverJSON's fields and tags, in order.
func (d driverJSON) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, d.ID)
	b = append(b, `,"services":`...)
	b = appendStrings(b, d.Services)
	b = append(b, `,"status":`...)
	b = appendString(b, string(d.Status))
	b = append(b, `,"location":{"lat":`...)
	if b, err = appendFloat(b, d.Location.Lat); err != nil {
		return nil, err
	}
	b = append(b, `,"lng":`...)
	if b, err = appendFloat(b, d.Location.Lng); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if !d.LastHeartbeat.IsZero() {
		b = append(b, `,"last_heartbeat":`...)
		if b, err = appendTime(b, d.LastHeartbeat); err != nil {
			return nil, err
		}
	}
	if d.BookingID != "" {
		b = append(b, `,"booking_id":`...)
		b = appendString(b, d.BookingID)
	}
	if !d.ReservedUntil.IsZero() {
		b = append(b, `,"reserved_until":`...)
		if b, err = appendTime(b, d.ReservedUntil); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"accepted":`...)
	b = strconv.AppendBool(b, d.Accepted)
	if d.Withdrawn {
		b = append(b, `,"withdrawn":true`...)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, d.Version, 10)
	b = append(b, `,"available":`...)
	b = strconv.AppendBool(b, d.Available)
	return append(b, '}'), nil
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendFloat is encoding/json's float64: the shortest decimal that reads
// back the same, in exponent form only for very small or large values.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendTime is encoding/json's time.Time: RFC 3339 with nanoseconds,
// quoted, refusing what RFC 3339 cannot say (a year not of four digits, a
// zone offset of 24 hours or more), as encoding/json checks it.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch ts := b[n0:]; {
	case ts[len("9999")] != '-':
		return nil, fmt.Errorf("json: time %v: year outside of range [0,9999]", t)
	case ts[len(ts)-1] != 'Z':
		c := ts[len(ts)-len("Z07:00")]
		h := ts[len(ts)-len("07:00"):]
		if '0' <= c && c <= '9' || (h[0]-'0')*10+h[1]-'0' >= 24 {
			return nil, fmt.Errorf("json: time %v: timezone hour outside of range [0,23]", t)
		}
	}
	return append(b, '"'), nil
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string, HTML-safe as json.Marshal makes
// it: quotes, backslashes and control characters escaped, <, > and &
// as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and invalid
// UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...) // the character itself, as encoding/json writes it since Go 1.27
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
