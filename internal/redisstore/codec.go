package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// decodeDriver turns an HMGET reply of driverFields into a Driver. A record
// without an id does not exist.
func decodeDriver(v any) (d driver.Driver, cell string, found bool, err error) {
	vals, ok := v.([]any)
	if !ok || len(vals) != len(driverFields) {
		return d, "", false, fmt.Errorf("driver record: unexpected reply %T", v)
	}
	s := func(i int) string { x, _ := vals[i].(string); return x }
	if s(0) == "" {
		return d, "", false, nil
	}
	d.ID = s(0)
	if svc := s(1); svc != "" {
		d.Services = strings.Split(svc, ",")
	}
	if d.Status, err = driver.ParseStatus(s(2)); err != nil {
		return d, "", false, fmt.Errorf("driver %s: %w", d.ID, err)
	}
	d.Location.Lat, _ = strconv.ParseFloat(s(3), 64)
	d.Location.Lng, _ = strconv.ParseFloat(s(4), 64)
	d.LastHeartbeat = fromMillis(s(5))
	d.BookingID = s(6)
	d.ReservedUntil = fromMillis(s(7))
	// "w": withdrawn (backing out), which builds before it read as not
	// accepted, and overwrite with "0" or "1" when they move the driver.
	d.Accepted, d.Withdrawn = s(8) == "1", s(8) == "w"
	d.Version, _ = strconv.ParseInt(s(9), 10, 64)
	return d, s(10), true, nil
}

// stateFields are the fields a transition writes (heartbeats write the rest).
func stateFields(d driver.Driver) []any {
	acc := "0"
	switch {
	case d.Accepted:
		acc = "1"
	case d.Withdrawn:
		acc = "w"
	}
	return []any{fID, d.ID, fServices, strings.Join(d.Services, ","), fStatus, string(d.Status),
		fBooking, d.BookingID, fUntil, millis(d.ReservedUntil), fAccepted, acc}
}

func millis(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func fromMillis(s string) time.Time {
	if s == "" { // the usual reservation: none, and no error to make
		return time.Time{}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
