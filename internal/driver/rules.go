package driver

import (
	"errors"
	"flag"
	"time"
)

// Rules decide when a driver can be offered a booking. They are the
// package's configuration.
type Rules struct {
	// StaleAfter is how long after its last heartbeat a driver stops being
	// offered bookings: a few heartbeat intervals, so one lost heartbeat
	// does not take a driver out of dispatch.
	StaleAfter time.Duration
}

// DefaultRules returns the rules used unless configured otherwise.
func DefaultRules() Rules {
	return Rules{StaleAfter: 30 * time.Second}
}

// RegisterFlags registers the rules' flags on fs, with r's current values as
// defaults.
func (r *Rules) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&r.StaleAfter, "driver.stale-after", r.StaleAfter,
		"how long after its last heartbeat a driver is no longer offered bookings")
}

// Validate reports whether the rules are usable.
func (r Rules) Validate() error {
	if r.StaleAfter <= 0 {
		return errors.New("driver.stale-after must be positive")
	}
	return nil
}

// Stale reports whether d's last heartbeat is more than StaleAfter before
// now. A driver that never sent one is stale; a heartbeat stamped slightly
// after now (clock skew between servers) is fresh.
func (r Rules) Stale(d Driver, now time.Time) bool {
	return d.LastHeartbeat.IsZero() || now.Sub(d.LastHeartbeat) > r.StaleAfter
}

// Available reports whether d can be offered a booking for service at now:
// status available, offering the service, and not stale.
func (r Rules) Available(d Driver, now time.Time, service string) bool {
	return d.Status == StatusAvailable && d.Serves(service) && !r.Stale(d, now)
}
