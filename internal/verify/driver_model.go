package verify

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/apollo-platform/apollo/internal/driver"
)

// driverLife is what the workers do to a driver (see DriverModel).
// Accepted → reserved is the first step of a driver's back-out (its
// accept withdrawn while its booking lets go), seen by a read while the
// decline runs or after its instance stopped; UnacceptedUnasked ties it to
// the driver's decline.
var driverLife = newLifecycle(map[string][]move{
	string(driver.StatusAvailable): {{to: string(driver.StatusReserved), ref: refAny}},
	string(driver.StatusReserved):  {{to: string(driver.StatusAvailable), ref: refClear}},
	driverAccepted:                 {{to: string(driver.StatusAvailable), ref: refClear}, {to: string(driver.StatusReserved), ref: refKeep}},
})

// driverAccepted is a reserved driver who accepted: a status of its own
// for the model, since only an accept leads there.
const driverAccepted = "reserved+accepted"

// driverCall is one operation on a driver as the driver model reads it.
type driverCall struct {
	Op      int // Op.ID; -1: the final state
	Kind    Kind
	Event   string
	Booking string // the event's booking; "": the one the driver holds
	Effect  effect
	Absent  bool
	Seen    seen
}

// newDriver is what a first heartbeat (or go_online) finds: an offline
// driver at version 0.
var newDriver = node{Exists: true, Status: string(driver.StatusOffline)}

// driverEvent is ev for booking (any booking when ""), or false for an
// event the model does not know.
func driverEvent(ev, bookingID string) (event, bool) {
	holds := func(ref string) bool { return bookingID == "" || refMatch(ref, bookingID) }
	keep := func(ref string) string {
		if ref == anyRef && bookingID != "" {
			return bookingID
		}
		return ref
	}
	clear := func(string) string { return "" }
	is := func(statuses ...string) func(string, string) bool {
		return func(status, ref string) bool {
			for _, s := range statuses {
				if status == s {
					return holds(ref)
				}
			}
			return false
		}
	}
	var (
		offline   = string(driver.StatusOffline)
		available = string(driver.StatusAvailable)
		reserved  = string(driver.StatusReserved)
		onTrip    = string(driver.StatusOnTrip)
	)
	switch driver.Event(ev) {
	case driver.EventGoOnline:
		return event{from: func(s, _ string) bool { return s == offline }, to: available, ref: clear}, true
	case driver.EventGoOffline:
		return event{from: func(s, _ string) bool { return s == available }, to: offline, ref: clear}, true
	case driver.EventAccept:
		return event{from: is(reserved), to: driverAccepted, ref: keep}, true
	case driver.EventDecline:
		return event{from: is(reserved, driverAccepted), to: available, ref: clear}, true
	case driver.EventStartTrip:
		return event{from: is(driverAccepted), to: onTrip, ref: keep}, true
	case driver.EventEndTrip:
		return event{from: is(onTrip), to: available, ref: clear}, true
	}
	return event{}, false
}

// acceptedAlready reports an accept answered with the driver as it was:
// it had accepted that booking already, or started its trip.
func acceptedAlready(c driverCall) bool {
	return c.Event == string(driver.EventAccept) &&
		(c.Seen.Status == driverAccepted || c.Seen.Status == string(driver.StatusOnTrip)) &&
		(c.Booking == "" || c.Seen.Ref == c.Booking)
}

// driverStep is the nondeterministic step of the driver model.
func driverStep(state, input, _ any) []any {
	n, c := state.(node), input.(driverCall)
	switch c.Kind {
	case Heartbeat:
		switch {
		case n.Exists:
			return []any{n}
		case c.Effect == effectOK:
			return []any{newDriver}
		}
		return []any{n, newDriver}
	case ReadDriver:
		if c.Absent {
			if !n.Exists {
				return []any{n}
			}
			return nil
		}
		if driverLife.reaches(n, c.Seen) {
			return []any{pin(c.Seen, false)}
		}
	case DriverEvent:
		ev, ok := driverEvent(c.Event, c.Booking)
		if !ok {
			return nil
		}
		from := n
		if !n.Exists && c.Event == string(driver.EventGoOnline) {
			from = newDriver
		}
		results := driverLife.after(from, ev)
		if c.Effect != effectOK {
			out := []any{n}
			for _, r := range results {
				out = append(out, r)
			}
			return out
		}
		for _, r := range results {
			if r.has(c.Seen) {
				return []any{pin(c.Seen, false)}
			}
		}
		if acceptedAlready(c) && driverLife.reaches(n, c.Seen) {
			return []any{pin(c.Seen, false)}
		}
	}
	return nil
}

// DriverModel is one driver's reservation register as a porcupine model
// of one driver's operations: absent, or a status, the booking it holds,
// whether it accepted it, and a version bumped by every event. Heartbeats leave the
// register alone (a first one creates an offline driver at version 0).
// The driver's app sends events; Apollo's workers move the register
// between them, one version per move:
//
//	available → reserved (some booking, not accepted)
//	reserved (accepted or not) → available (expired, or declined by the
//	sweep or by a cancel)
//
// Everything else takes an event: accept (reserved for that booking →
// accepted; an accept already recorded is answered with the driver as it
// is), decline, start_trip (accepted only), end_trip, go_online,
// go_offline. An accept refused with a 409 or 404 may have been applied
// (the driver accepts before the booking follows, and the booking's
// failure is the answer), so it counts as unknown.
//
// What it catches: an event answered with a state no sequence of moves
// and events explains (a version lower than one already seen, an accept
// answered OK whose effect a later answer contradicts, a trip started on
// an accept that never happened, an accepted reservation turned into
// another booking's without passing through available); a read showing a
// state the register never had (an accepted reservation no accept made,
// a booking an on-trip driver never held).
//
// What it cannot catch: driver reads are served by replicas (the router's
// read policy), so they may be stale; a read may be placed up to
// Options.DriverReadLag before its invocation, and two reads may go
// backwards between them. Only event answers (written on the primary) are
// held to real-time order among themselves (reads too with
// Options.FreshDriverReads). A reservation's own end
// (reserved_until) is not modelled: that a lapsed reservation was swept is
// the orphan_reservation audit's. A driver held by two bookings is not
// visible here (the driver holds one booking at a time by construction);
// see the driver_held_twice audit.
//
// DriverOps makes its histories, one per driver.
func DriverModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init:                      func() []any { return []any{node{}} },
		Step:                      driverStep,
		Hash:                      hashNode,
		DescribeOperation:         describeDriverCall,
		DescribeState:             describeNode,
		DescribeOperationMetadata: describeMetadata,
	}
	return nm.ToModel()
}

func describeDriverCall(input, _ any) string {
	c := input.(driverCall)
	what := string(c.Kind)
	if c.Kind == DriverEvent {
		what = c.Event
		if c.Booking != "" {
			what += " " + c.Booking
		}
	}
	if c.Kind == Heartbeat && c.Effect == effectOK {
		return fmt.Sprintf("#%d heartbeat → ok", c.Op)
	}
	return describeCall(c.Op, what, c.Effect, c.Absent, c.Seen, "")
}

// seenDriver is a driver answer as the model compares it.
func seenDriver(s State) seen {
	status := s.Status
	if status == string(driver.StatusReserved) && s.Accepted {
		status = driverAccepted
	}
	return seen{Status: status, Ref: s.BookingID, Version: s.Version}
}

// DriverOps is h as one porcupine history per driver ID (reads, events,
// the heartbeats that may have created the driver, and the final state
// as a last read), for DriverModel. A read is given an invocation lag
// earlier than it was made (lag 0: as made): a replica may serve it a
// state that old. Events the model does not know are left out.
func DriverOps(h History, lag time.Duration) map[string][]porcupine.Operation {
	t := timelineOf(h)
	// A heartbeat after an answer showed the driver existing changes
	// nothing the model sees: left out, it costs porcupine nothing.
	existed := map[string]int64{}
	for _, op := range h.Ops {
		if op.DriverID == "" || op.Outcome != OK || op.Seen.Status == "" || op.Kind == Heartbeat {
			continue
		}
		if at, ok := existed[op.DriverID]; !ok || op.Return < at {
			existed[op.DriverID] = op.Return
		}
	}
	parts := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		if op.DriverID == "" || op.Kind != ReadDriver && op.Kind != DriverEvent && op.Kind != Heartbeat {
			continue
		}
		if _, ok := parts[op.DriverID]; !ok {
			parts[op.DriverID] = nil
		}
		e, open, ok := effectOf(op)
		if !ok {
			continue
		}
		if at, found := existed[op.DriverID]; op.Kind == Heartbeat && found && op.Invoke > at {
			continue
		}
		if _, known := driverEvent(op.Event, op.BookingID); op.Kind == DriverEvent && !known {
			continue
		}
		c := driverCall{Op: op.ID, Kind: op.Kind, Event: op.Event, Booking: op.BookingID, Effect: e, Absent: absentAnswer(op), Seen: seenDriver(op.Seen)}
		o := t.operation(op, c, open)
		if op.Kind == ReadDriver {
			o.Call = max(0, o.Call-lag.Nanoseconds())
		}
		parts[op.DriverID] = append(parts[op.DriverID], o)
	}
	t.finish(parts, h.Final.Drivers, func(found bool, d State) any {
		return driverCall{Op: -1, Kind: ReadDriver, Absent: !found, Seen: seenDriver(d)}
	})
	return parts
}
