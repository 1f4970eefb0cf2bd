package driver

// Event is something that happens to a driver (see the package doc).
type Event string

// The driver events. Their strings are sent over the wire.
const (
	EventGoOnline  Event = "go_online"
	EventGoOffline Event = "go_offline"
	EventReserve   Event = "reserve" // by one booking, until an expiry
	EventAccept    Event = "accept"  // the driver accepts the reservation
	EventDecline   Event = "decline" // the driver declines the reservation
	// EventBackOut withdraws a driver's accept, keeping the reservation: the
	// first step of a driver backing out of a booking it accepted, so that
	// no trip can start while the booking lets go (then a decline frees it).
	// One way: the reservation is Withdrawn, and cannot be accepted again.
	EventBackOut   Event = "back_out"
	EventExpire    Event = "expire"     // the reservation lapsed
	EventStartTrip Event = "start_trip" // the rider is picked up
	EventEndTrip   Event = "end_trip"
)

// Events returns every valid Event.
func Events() []Event {
	return []Event{
		EventGoOnline, EventGoOffline, EventReserve, EventAccept,
		EventDecline, EventBackOut, EventExpire, EventStartTrip, EventEndTrip,
	}
}

// ParseEvent returns the Event named s, or an *InvalidArgumentError.
func ParseEvent(s string) (Event, error) {
	for _, ev := range Events() {
		if string(ev) == s {
			return ev, nil
		}
	}
	return "", unknownValue("event", s, Events())
}

// String returns the event name.
func (e Event) String() string { return string(e) }

// MarshalText implements encoding.TextMarshaler.
func (e Event) MarshalText() ([]byte, error) { return []byte(e), nil }

// UnmarshalText implements encoding.TextUnmarshaler, so decoding JSON
// validates through ParseEvent.
func (e *Event) UnmarshalText(text []byte) error {
	ev, err := ParseEvent(string(text))
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// bookingScoped reports whether the event is about the driver's current
// booking and so must name it.
func (e Event) bookingScoped() bool {
	switch e {
	case EventAccept, EventDecline, EventBackOut, EventExpire, EventStartTrip, EventEndTrip:
		return true
	}
	return false
}
