package driver

import "time"

// Heartbeat returns d with the location reported at now. It is valid in
// every status (an offline driver's last position is still useful) and
// leaves Version alone: heartbeats write different fields from transitions,
// so they must not make a concurrent reservation fail its version check.
//
// LastHeartbeat never moves backwards, so a heartbeat delayed behind a newer
// one cannot make a driver look fresher than it is; its location is then
// ignored too, being older than the one already held.
func Heartbeat(d Driver, loc Location, now time.Time) (Driver, error) {
	if err := ValidateLocation(loc.Lat, loc.Lng); err != nil {
		return d, err
	}
	if now.Before(d.LastHeartbeat) {
		return d, nil
	}
	d.Location, d.LastHeartbeat = loc, now
	return d, nil
}
