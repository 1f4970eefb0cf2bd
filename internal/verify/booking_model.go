package verify

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/apollo-platform/apollo/internal/booking"
)

// bookingLife is what the workers do to a booking (see BookingModel).
// Searching → searching is a driver's decline finding the booking already
// searching: it writes the booking anyway, one version, so that an
// allocation naming that driver, in flight, fails its compare-and-set
// (booking.Service.follow). A decline whose driver write then fails is
// sent again by the driver's app, and writes it again. Accepted →
// searching is a driver backing out of the booking it accepted.
var bookingLife = newLifecycle(map[string][]move{
	string(booking.Searching): {{to: string(booking.Allocated), ref: refAny}, {to: string(booking.Unallocated), ref: refClear}, {to: string(booking.Searching), ref: refClear}},
	string(booking.Allocated): {{to: string(booking.Accepted), ref: refKeep}, {to: string(booking.Searching), ref: refClear}},
	string(booking.Accepted):  {{to: string(booking.Searching), ref: refClear}},
})

// bookingCall is one operation on a booking, as the booking model reads
// it (porcupine's input; the output is part of it).
type bookingCall struct {
	Op     int // Op.ID; -1: the final state
	Kind   Kind
	Effect effect
	Absent bool // the answer was "not found"
	Seen   seen // the state answered, unless Absent
	Code   string
}

var (
	absentBooking = node{}
	// createdBooking is what a create makes: searching at version 1.
	createdBooking = node{Exists: true, Status: string(booking.Searching), Version: 1}
	cancelEvent    = event{
		from: func(status, _ string) bool {
			return status == string(booking.Searching) || status == string(booking.Allocated)
		},
		to:  string(booking.Cancelled),
		ref: func(string) string { return "" },
	}
)

// mayBeAbsent reports whether a booking in n can be absent: it never was
// created, or it is a create still unconfirmed that can be withdrawn.
func mayBeAbsent(n node) bool {
	return !n.Exists || n.Status == string(booking.Searching) && n.Version == 1 && n.Every == 0 && !n.Confirmed
}

// settled reports a status a rider's cancel is refused in (not open), and
// after which a rider stops following the booking.
func settled(status string) bool { return !booking.Status(status).Open() }

// bookingStep is the nondeterministic step: every node the booking may be
// in after c, from a booking in n; none if c cannot have happened.
func bookingStep(state, input, _ any) []any {
	n, c := state.(node), input.(bookingCall)
	switch c.Kind {
	case ReadBooking:
		if c.Absent {
			if mayBeAbsent(n) {
				return []any{absentBooking}
			}
			return nil
		}
		if bookingLife.reaches(n, c.Seen) {
			return []any{pin(c.Seen, n.Confirmed)}
		}
	case CreateBooking:
		if c.Effect == effectOK {
			// The booking answered is the one found (a retry) or the one
			// made; either way it is now confirmed.
			if bookingLife.reaches(n, c.Seen) || mayBeAbsent(n) && bookingLife.reaches(createdBooking, c.Seen) {
				return []any{pin(c.Seen, true)}
			}
			return nil
		}
		out := []any{n}
		if mayBeAbsent(n) {
			out = append(out, createdBooking)
		}
		return out
	case CancelBooking:
		switch c.Effect {
		case effectOK:
			if n.Exists && n.Status == string(booking.Cancelled) && bookingLife.reaches(n, c.Seen) {
				// Sent again: answered with the cancelled booking as it is.
				return []any{pin(c.Seen, n.Confirmed)}
			}
			for _, r := range bookingLife.after(n, cancelEvent) {
				if r.has(c.Seen) {
					return []any{pin(c.Seen, n.Confirmed)}
				}
			}
		case effectMaybe:
			out := []any{n}
			for _, r := range bookingLife.after(n, cancelEvent) {
				out = append(out, r)
			}
			return out
		case effectRefused:
			if c.Code != "illegal_transition" {
				if mayBeAbsent(n) {
					return []any{absentBooking}
				}
				return nil
			}
			// Refused as illegal: the booking was settled at that point,
			// and not cancelled (a cancel of a cancelled booking is done).
			var out []any
			for sp := range bookingLife.spans(n) {
				if settled(sp.Status) && sp.Status != string(booking.Cancelled) {
					out = append(out, sp)
				}
			}
			return out
		}
	}
	return nil
}

// BookingModel is one booking's lifecycle as its riders see it, as a
// porcupine model of one booking's operations. A booking is absent, or
// has a status, a driver and a version. Riders create, read and cancel
// it; Apollo's workers move it between their operations, as
// booking.transition allows, one version per move:
//
//	searching → allocated (some driver) | unallocated | searching (a decline's write)
//	allocated → accepted (same driver)  | searching
//
// and one more move out of the state machine: a create no replica
// confirmed is withdrawn, deleted while still searching at version 1, but
// only if no create of it was answered OK (G3: a booking reported created
// is never lost; Apollo's withdrawal deletes only its own attempt's
// record, and none a retry kept, whatever that retry was answered). Cancelled is reached only by a cancel: no worker
// cancels. Unallocated and cancelled never change; accepted changes only
// back to searching, when its driver backs out.
//
// What it catches: a booking reported created that reads as absent
// afterwards; a read older than one already observed (read-your-writes,
// monotonic reads: booking reads go to the primary); a final status
// changing; a status, driver or version no sequence of moves explains (an
// accepted booking whose driver changed, a version that skipped the moves
// it needs); a cancel reported done from a state it is illegal in (a
// cancel of a cancelled booking is done, answered with the booking as it
// is), or refused as illegal while the booking was still open; a booking existing
// with no create that may have made it. Unknown outcomes are taken as
// applied at any time after their invocation, or never.
//
// BookingOps makes its histories, one per booking.
func BookingModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init:              func() []any { return []any{absentBooking} },
		Step:              bookingStep,
		Hash:              hashNode,
		DescribeOperation: describeBookingCall,
		DescribeState: func(state any) string {
			n := state.(node)
			if mayBeAbsent(n) && n.Exists {
				return describeNode(n) + " (unconfirmed)"
			}
			return describeNode(n)
		},
		DescribeOperationMetadata: describeMetadata,
	}
	return nm.ToModel()
}

func describeBookingCall(input, _ any) string {
	c := input.(bookingCall)
	return describeCall(c.Op, string(c.Kind), c.Effect, c.Absent, c.Seen, c.Code)
}

// describeCall is the label of an operation in the HTML view.
func describeCall(op int, what string, e effect, absent bool, s seen, code string) string {
	name := fmt.Sprintf("#%d %s", op, what)
	if op < 0 {
		name = "final state"
	}
	switch {
	case e == effectMaybe:
		return name + " → ? (may have happened)"
	case e == effectRefused:
		return name + " → refused: " + code
	case absent:
		return name + " → absent"
	}
	return name + " → " + describeNode(pin(s, false))
}

func describeMetadata(m any) string {
	if m == nil {
		return ""
	}
	return fmt.Sprint(m)
}

// seenBooking is a booking answer as the model compares it.
func seenBooking(s State) seen { return seen{Status: s.Status, Ref: s.DriverID, Version: s.Version} }

// BookingOps is h as one porcupine history per booking ID (create, read
// and cancel operations, and the final state as a last read), for
// BookingModel. Operations that tell the model nothing (failed reads,
// writes refused without saying why) are left out; a booking whose every
// operation was is still checked against the final state.
func BookingOps(h History) map[string][]porcupine.Operation {
	t := timelineOf(h)
	parts := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		if op.BookingID == "" || op.Kind != CreateBooking && op.Kind != ReadBooking && op.Kind != CancelBooking {
			continue
		}
		if _, ok := parts[op.BookingID]; !ok {
			parts[op.BookingID] = nil // checked against the final state even with nothing else to check
		}
		e, open, ok := effectOf(op)
		if !ok {
			continue
		}
		c := bookingCall{Op: op.ID, Kind: op.Kind, Effect: e, Absent: absentAnswer(op), Seen: seenBooking(op.Seen), Code: op.Code}
		parts[op.BookingID] = append(parts[op.BookingID], t.operation(op, c, open))
	}
	t.finish(parts, h.Final.Bookings, func(found bool, b State) any {
		return bookingCall{Op: -1, Kind: ReadBooking, Absent: !found, Seen: seenBooking(b)}
	})
	return parts
}

// sortedKeys is m's keys in order, for reports that read the same twice.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
