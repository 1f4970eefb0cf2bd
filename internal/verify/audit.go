package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
)

// Violation codes of the audits. Each is stable: tools may match on it.
const (
	CodeCreatedLost       = "created_lost"
	CodeDriverHeldTwice   = "driver_held_twice"
	CodeOrphanReservation = "orphan_reservation"
	CodeBookingStuck      = "booking_stuck"
	CodeRulesDiffer       = "rules_differ"
	CodeGhostBooking      = "ghost_booking"
)

// An Audit checks what porcupine cannot see: invariants across bookings
// and drivers, and the final state against the run's settings.
type Audit struct {
	Code string
	// Skip, when set, says why a history cannot be audited ("" when it
	// can): the audit is then reported skipped, not passed.
	Skip func(History) string
	Run  func(History) []Violation
}

// Audits lists every audit, in the order reports show them.
func Audits() []Audit {
	return []Audit{
		{Code: CodeCreatedLost, Skip: noFinal, Run: CreatedLost},
		{Code: CodeDriverHeldTwice, Run: DriverHeldTwice},
		{Code: CodeDeclineKeptBooking, Run: DeclinesKeptBookings},
		{Code: CodeAcceptedUnasked, Run: AcceptedUnasked},
		{Code: CodeReopenedUnasked, Run: ReopenedUnasked},
		{Code: CodeUnacceptedUnasked, Run: UnacceptedUnasked},
		{Code: CodeTripBookingMoved, Run: TripBookingsMoved},
		{Code: CodeOrphanReservation, Skip: noFinal, Run: OrphanReservations},
		{Code: CodeReservationOverdue, Skip: overdueUnjudged, Run: OverdueReservations},
		{Code: CodeBookingStuck, Skip: noFinal, Run: StuckBookings},
		{Code: CodeRulesDiffer, Skip: noFinal, Run: RulesDiffer},
		{Code: CodeGhostBooking, Skip: noFinal, Run: GhostBookings},
		{Code: CodeInternalError, Run: InternalErrors},
		{Code: CodeClockOff, Skip: clockUnjudged, Run: ClockOff},
		{Code: CodeTimeOutOfBounds, Skip: timesUnjudged, Run: TimesOutOfBounds},
		{Code: CodeRightsMissing, Skip: rightsUnjudged, Run: RightsMissing},
	}
}

// noFinal skips the audits that read the final state.
func noFinal(h History) string {
	if h.Final.At.IsZero() {
		return "the history has no final state"
	}
	return ""
}

// sinceStart is a unix-ms time of an answer as nanoseconds into the run.
func (h History) sinceStart(ms int64) int64 { return time.UnixMilli(ms).Sub(h.Start).Nanoseconds() }

// runTime renders nanoseconds into the run.
func runTime(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// finalAt is when the final state was read, in nanoseconds into the run.
func (h History) finalAt() int64 { return h.Final.At.Sub(h.Start).Nanoseconds() }

// finalReads is the final state as reads made at its time, each with the
// ID -1: its bookings, then its drivers. None without a final state.
func (h History) finalReads() []Op {
	if h.Final.At.IsZero() {
		return nil
	}
	at := h.finalAt()
	var out []Op
	for _, id := range sortedKeys(h.Final.Bookings) {
		out = append(out, Op{ID: -1, Kind: ReadBooking, BookingID: id, Invoke: at, Return: at, Seen: h.Final.Bookings[id]})
	}
	for _, id := range sortedKeys(h.Final.Drivers) {
		out = append(out, Op{ID: -1, Kind: ReadDriver, DriverID: id, Invoke: at, Return: at, Seen: h.Final.Drivers[id]})
	}
	return out
}

// answers is every op of the run, then the final state's reads
// (finalReads).
func (h History) answers() []Op {
	return append(append([]Op(nil), h.Ops...), h.finalReads()...)
}

// bookingAnswer reports an answer that shows a booking: an OK read,
// create or cancel, or the final state's stand-in.
func bookingAnswer(op Op) bool {
	return op.BookingID != "" && op.Seen.Status != "" && (op.ID < 0 || op.Outcome == OK && op.Status < 300) &&
		(op.Kind == ReadBooking || op.Kind == CreateBooking || op.Kind == CancelBooking)
}

// driverAnswer reports an answer that shows a driver: an OK read or
// event, or the final state's stand-in.
func driverAnswer(op Op) bool {
	return op.DriverID != "" && op.Seen.Status != "" && (op.ID < 0 || op.Outcome == OK && op.Status < 300) &&
		(op.Kind == ReadDriver || op.Kind == DriverEvent)
}

// opIDs is the IDs of ops (not the final state's stand-in, -1).
func opIDs(ops []Op) []int {
	var ids []int
	for _, op := range ops {
		if op.ID >= 0 {
			ids = append(ids, op.ID)
		}
	}
	return ids
}

func (h History) creates() map[string][]Op {
	out := map[string][]Op{}
	for _, op := range h.Ops {
		if op.Kind == CreateBooking && op.BookingID != "" {
			out[op.BookingID] = append(out[op.BookingID], op)
		}
	}
	return out
}

// CreatedLost (G3): every booking a create was answered OK for exists in
// the final state.
func CreatedLost(h History) []Violation {
	var out []Violation
	creates := h.creates()
	for _, id := range sortedKeys(creates) {
		var ok []Op
		for _, op := range creates[id] {
			if op.Outcome == OK {
				ok = append(ok, op)
			}
		}
		if _, found := h.Final.Bookings[id]; len(ok) == 0 || found {
			continue
		}
		out = append(out, Violation{Code: CodeCreatedLost, Bookings: []string{id}, Ops: opIDs(ok),
			Message: fmt.Sprintf("booking %s was reported created (op #%d answered %d at %s) but is absent from the final state",
				id, ok[0].ID, ok[0].Status, runTime(ok[0].Return))})
	}
	return out
}

// GhostBookings (G3): a booking every create of which was refused (so it
// was certainly never stored) does not exist in the final state. A create
// whose outcome is unknown (a 503 after the write may have happened) may
// have made it, so only bookings with no such create are checked.
func GhostBookings(h History) []Violation {
	var out []Violation
	creates := h.creates()
	for _, id := range sortedKeys(creates) {
		ops := creates[id]
		b, found := h.Final.Bookings[id]
		if !found || slices.ContainsFunc(ops, func(op Op) bool { return op.Outcome != Failed }) {
			continue
		}
		status := b.Status
		if b.DriverID != "" {
			status += " with driver " + b.DriverID
		}
		out = append(out, Violation{Code: CodeGhostBooking, Bookings: []string{id}, Drivers: nonEmpty(b.DriverID), Ops: opIDs(ops),
			Message: fmt.Sprintf("booking %s exists in the final state (%s) although its only create (op #%d) was refused (%d %s)",
				id, status, ops[0].ID, ops[0].Status, ops[0].Code)})
	}
	return out
}

func nonEmpty(ids ...string) []string {
	var out []string
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

// OrphanReservations (G5): no driver in the final state is reserved for a
// booking that does not hold it (allocated to it, or accepted with it)
// when its reservation ended more than the slack before the final state
// was read. A reservation with no end recorded counts as ended.
func OrphanReservations(h History) []Violation {
	var out []Violation
	for _, id := range sortedKeys(h.Final.Drivers) {
		d := h.Final.Drivers[id]
		if d.Status != string(driver.StatusReserved) {
			continue
		}
		end := time.UnixMilli(d.ReservedUntil)
		if d.ReservedUntil != 0 && !end.Add(h.Slack).Before(h.Final.At) {
			continue
		}
		b, found := h.Final.Bookings[d.BookingID]
		if found && b.DriverID == id && (b.Status == string(booking.Allocated) || b.Status == string(booking.Accepted)) {
			continue
		}
		holder := "absent"
		if found {
			holder = b.Status
			if b.DriverID != "" {
				holder += " with driver " + b.DriverID
			}
		}
		ended := "no reservation end recorded"
		if d.ReservedUntil != 0 {
			ended = fmt.Sprintf("its reservation ended %s before the final state, slack %s", h.Final.At.Sub(end).Round(time.Millisecond), h.Slack)
		}
		out = append(out, Violation{Code: CodeOrphanReservation, Drivers: []string{id}, Bookings: nonEmpty(d.BookingID),
			Message: fmt.Sprintf("driver %s is still reserved for booking %s (accepted %t), which does not hold it (%s); %s",
				id, d.BookingID, d.Accepted, holder, ended)})
	}
	return out
}

// StuckBookings (G4): no booking in the final state is still searching
// more than the slack after its deadline, or still allocated more than
// the slack after both its deadline and its reservation's end (a driver
// reserved just before the deadline may answer until the reservation
// ends). A booking with no deadline recorded counts as past it. Nor was
// one read so during the run (booking reads are the primary's, confirmed)
// once the slack had passed in one stretch without a fault that may stop
// writes: before, only the final state was judged, and a booking stuck
// for a minute that ended before the run did passed (a reviewer found
// it). One violation a booking.
func StuckBookings(h History) []Violation {
	reopened := h.reopenings()
	out := stuckInFinal(h, reopened)
	judged := map[string]bool{}
	for _, v := range out {
		judged[v.Bookings[0]] = true
	}
	if clockStepped(h, "") != "" {
		return out // deadlines, in the cluster's time, are off the run's timeline
	}
	windows := faultWindows(h)
	for _, op := range h.Ops {
		b := op.Seen
		if op.Outcome != OK || op.BookingID == "" || judged[op.BookingID] || b.Deadline == 0 ||
			(op.Kind != ReadBooking && op.Kind != CreateBooking && op.Kind != CancelBooking) {
			continue
		}
		due, open := dueBy(b)
		if !open {
			continue
		}
		if b.Status == string(booking.Searching) {
			// A reservation made just before the deadline may run its TTL
			// past it; the booking is searching again after, and given up
			// at its next advance. Or a driver backed out of it later.
			due = max(b.Deadline+h.ReservationTTL.Milliseconds(), reopened.by(op.BookingID, op.Return))
		}
		calm, ok := writableFor(windows, h.sinceStart(due), op.Invoke, h.Slack.Nanoseconds(), h.instances() < 2)
		if !ok {
			continue
		}
		judged[op.BookingID] = true
		out = append(out, Violation{Code: CodeBookingStuck, Bookings: []string{op.BookingID}, Drivers: nonEmpty(b.DriverID), Ops: []int{op.ID},
			Message: fmt.Sprintf("booking %s was read %s at version %d at %s (op #%d), %s past %s, slack %s, with no fault stopping writes from %s to %s",
				op.BookingID, b.Status, b.Version, runTime(op.Invoke), op.ID, time.Duration(op.Invoke-h.sinceStart(due)).Round(time.Millisecond),
				dueWhat(b, due), h.Slack, runTime(calm[0]), runTime(calm[1]))})
	}
	return out
}

// reopenings is, for each booking, the declines its drivers sent: each may
// have sent it back to searching, an accepted booking past its deadline
// included (its driver backed out).
type reopenings struct {
	start    time.Time
	end      int64 // the run's, ns into it
	declines map[string][]Op
}

func (h History) reopenings() reopenings {
	r := reopenings{start: h.Start, end: h.finalAt(), declines: map[string][]Op{}}
	for _, op := range h.Ops {
		r.end = max(r.end, op.Return)
		if op.Kind == DriverEvent && op.Event == string(driver.EventDecline) && op.BookingID != "" {
			r.declines[op.BookingID] = append(r.declines[op.BookingID], op)
		}
	}
	return r
}

// landedBy is when op's changes, if any, had landed at the latest, ns
// into the run: its return, or an unknown one's deadline (Apollo makes a
// write's changes before it or never), end (the run's) without one.
func landedBy(op Op, end int64) int64 {
	switch {
	case op.Outcome != Unknown:
		return op.Return
	case op.Deadline == 0:
		return end
	default:
		return max(op.Return, op.Deadline)
	}
}

// by is, as a unix-ms time, when the last of booking id's declines
// invoked by t (ns into the run) had landed at the latest (landedBy); 0
// if none. Taken from the history, not from Apollo's own answers.
func (r reopenings) by(id string, t int64) int64 {
	var last int64
	for _, d := range r.declines[id] {
		if d.Invoke > t {
			continue
		}
		last = max(last, landedBy(d, r.end))
	}
	if last == 0 {
		return 0
	}
	return r.start.Add(time.Duration(last)).UnixMilli()
}

// instances is how many instances the run had: as recorded, or, in a
// history an older apollo verify wrote, as many as served rules at the
// end.
func (h History) instances() int {
	if h.Instances > 0 {
		return h.Instances
	}
	return len(h.Final.Rules)
}

// dueBy is when booking b must have moved on by, less the slack: its
// deadline when searching, and its reservation's end too when allocated
// (a driver reserved just before the deadline may answer until then);
// open false when b is in neither state.
func dueBy(b State) (due int64, open bool) {
	switch b.Status {
	case string(booking.Searching):
		return b.Deadline, true
	case string(booking.Allocated):
		return max(b.Deadline, b.ReservedUntil), true
	}
	return 0, false
}

func dueWhat(b State, due int64) string {
	if b.Status == string(booking.Searching) && due > b.Deadline {
		return "its return to searching (after its deadline)"
	}
	if due != b.Deadline {
		return "its reservation's end (after its deadline)"
	}
	return "its deadline"
}

// stuckInFinal is StuckBookings' judgement of the final state.
func stuckInFinal(h History, reopened reopenings) []Violation {
	var out []Violation
	for _, id := range sortedKeys(h.Final.Bookings) {
		b := h.Final.Bookings[id]
		due, open := dueBy(b)
		if !open {
			continue
		}
		if b.Status == string(booking.Searching) {
			due = max(due, reopened.by(id, h.finalAt()))
		}
		if b.Deadline != 0 && !time.UnixMilli(due).Add(h.Slack).Before(h.Final.At) {
			continue
		}
		late := "no deadline recorded"
		if b.Deadline != 0 {
			late = fmt.Sprintf("%s past %s, slack %s", h.Final.At.Sub(time.UnixMilli(due)).Round(time.Millisecond), dueWhat(b, due), h.Slack)
		}
		out = append(out, Violation{Code: CodeBookingStuck, Bookings: []string{id}, Drivers: nonEmpty(b.DriverID),
			Message: fmt.Sprintf("booking %s is still %s at version %d in the final state, %s", id, b.Status, b.Version, late)})
	}
	return out
}

// RulesDiffer: every instance serves the same Spampede rules in the final
// state (compared as JSON values, so key order and spacing do not count).
func RulesDiffer(h History) []Violation {
	variants := map[string][]string{} // canonical rules → instances
	for _, in := range sortedKeys(h.Final.Rules) {
		c := canonicalJSON(h.Final.Rules[in])
		variants[c] = append(variants[c], in)
	}
	if len(variants) < 2 {
		return nil
	}
	var groups []string
	var instances []string
	for _, c := range sortedKeys(variants) {
		ins := variants[c]
		instances = append(instances, ins...)
		groups = append(groups, fmt.Sprintf("%s serve %s", strings.Join(ins, ", "), abbreviate(c, 120)))
	}
	return []Violation{{Code: CodeRulesDiffer, Instances: instances,
		Message: fmt.Sprintf("the instances serve %d different Spampede rule sets: %s", len(variants), strings.Join(groups, "; "))}}
}

func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return strings.TrimSpace(s)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(b.String())
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// allocation is what reads saw of one booking at one version while it
// held its driver (allocated, or accepted): its driver, until when the
// hold lasts at most, and when the record certainly was at that version.
type allocation struct {
	booking, driver string
	version         int64
	accepted        bool
	// until, ns into the run: an allocation's reservation's end; for an
	// accepted booking, the first invocation of its driver's end_trip of
	// it (math.MaxInt64 if none): nothing else frees a driver while its
	// accepted booking still names it at that version (a back-out moves
	// the booking on first, as a cancel does).
	until int64
	// lo, hi: the record was at this version throughout [lo, hi] (each
	// read happened within its own interval and a version never comes
	// back), empty when lo > hi.
	lo, hi int64
	seenBy []Op
}

// allocations gathers every OK answer showing an allocated or accepted
// booking, and the final state as a read made at its time. Allocated
// versions with no reservation end recorded are left out: their liveness
// is unknown.
func (h History) allocations() map[string][]*allocation {
	type key struct {
		booking string
		version int64
	}
	tripEnds := h.firstSent(false, driver.EventEndTrip)
	byKey := map[key]*allocation{}
	var order []key
	add := func(id string, s State, op Op) {
		var until int64
		switch {
		case s.DriverID == "":
			return
		case s.Status == string(booking.Allocated) && s.ReservedUntil != 0:
			until = h.sinceStart(s.ReservedUntil)
		case s.Status == string(booking.Accepted):
			until = tripEnds.of(s.DriverID, id)
		default:
			return
		}
		k := key{id, s.Version}
		a, ok := byKey[k]
		if !ok {
			a = &allocation{booking: id, driver: s.DriverID, version: s.Version, accepted: s.Status == string(booking.Accepted),
				until: until, lo: op.Return, hi: op.Invoke}
			byKey[k] = a
			order = append(order, k)
		}
		a.lo, a.hi = min(a.lo, op.Return), max(a.hi, op.Invoke)
		a.seenBy = append(a.seenBy, op)
	}
	for _, op := range h.answers() {
		if bookingAnswer(op) {
			add(op.BookingID, op.Seen, op)
		}
	}
	out := map[string][]*allocation{}
	for _, k := range order {
		a := byKey[k]
		out[a.driver] = append(out[a.driver], a)
	}
	return out
}

// sentAt is, for a driver and a booking ("" for an event that named
// none), when the driver first sent one of some events for it.
type sentAt map[[2]string]int64

// firstSent is when each driver first sent one of events for each
// booking; refused ones (a 4xx) count only with refusedToo: a refused
// event changed nothing on the driver, but one answered 409 may have moved
// its booking first (Respond's booking step comes before the driver's).
func (h History) firstSent(refusedToo bool, events ...driver.Event) sentAt {
	out := sentAt{}
	for _, op := range h.Ops {
		if op.Kind != DriverEvent || op.Outcome == Failed && !refusedToo || !slices.Contains(events, driver.Event(op.Event)) {
			continue
		}
		k := [2]string{op.DriverID, op.BookingID}
		if t, ok := out[k]; !ok || op.Invoke < t {
			out[k] = op.Invoke
		}
	}
	return out
}

// of is when the driver first sent one for the booking, or naming none;
// math.MaxInt64 if never.
func (s sentAt) of(driverID, bookingID string) int64 {
	first := int64(math.MaxInt64)
	for _, b := range []string{bookingID, ""} {
		if t, ok := s[[2]string{driverID, b}]; ok {
			first = min(first, t)
		}
	}
	return first
}

// together returns an instant at which a and b certainly both held their
// driver with live reservations, if the reads prove one: the two
// certain windows overlap, or a read of one falls wholly within the
// other's window, before both reservations' ends.
func together(a, b *allocation) (int64, bool) {
	live := min(a.until, b.until)
	if lo, hi := max(a.lo, b.lo), min(a.hi, b.hi); a.lo <= a.hi && b.lo <= b.hi && lo <= hi && lo < live {
		return lo, true
	}
	within := func(w, x *allocation) (int64, bool) {
		if w.lo > w.hi {
			return 0, false
		}
		for _, op := range x.seenBy {
			if op.Invoke >= w.lo && op.Return <= w.hi && op.Return < live {
				return op.Invoke, true
			}
		}
		return 0, false
	}
	if t, ok := within(a, b); ok {
		return t, true
	}
	return within(b, a)
}

// DriverHeldTwice (G2): no driver is held by two bookings at once. A
// booking's record can still say allocated just after its reservation
// lapsed (the workers then free the driver and may reserve it again), so
// only two allocations whose reservations were both live at an instant
// the reads prove both records were allocated to the driver count: the
// final state (read at one instant) and reads that bracket each other.
// Two reads that merely overlap prove nothing: the first booking may have
// let go in between. An accepted booking holds its driver until the
// driver ends the trip (the trip's end leaves the booking accepted), so
// it counts until the first end_trip of it the driver sent.
// A decline does not end it: Apollo moves the booking on (searching
// again, a new version) before it frees a driver backing out, so while
// the booking still names the driver at that accepted version the driver
// is not free. Until 2026-12-06 the driver's first decline of the booking
// ended the hold too, at any time: a decline of an earlier reservation of
// the same booking hid the hold of its later acceptance.
func DriverHeldTwice(h History) []Violation {
	var out []Violation
	byDriver := h.allocations()
	for _, d := range sortedKeys(byDriver) {
		as := byDriver[d]
		reported := map[[2]string]bool{}
		for i, a := range as {
			for _, b := range as[i+1:] {
				pair := [2]string{min(a.booking, b.booking), max(a.booking, b.booking)}
				if a.booking == b.booking || reported[pair] {
					continue
				}
				t, ok := together(a, b)
				if !ok {
					continue
				}
				reported[pair] = true
				describe := func(x *allocation) string {
					if x.accepted {
						return fmt.Sprintf("%s (accepted at version %d, seen by %s)", x.booking, x.version, describeOps(x.seenBy))
					}
					return fmt.Sprintf("%s (allocated at version %d, reserved until %s, seen by %s)", x.booking, x.version, runTime(x.until), describeOps(x.seenBy))
				}
				out = append(out, Violation{Code: CodeDriverHeldTwice, Drivers: []string{d}, Bookings: pair[:],
					Ops: append(opIDs(a.seenBy), opIDs(b.seenBy)...),
					Message: fmt.Sprintf("driver %s was held by two bookings at about %s: %s and %s",
						d, runTime(t), describe(a), describe(b))})
			}
		}
	}
	return out
}

// describeOps names ops by ID ("the final state" for the final read).
func describeOps(ops []Op) string {
	var names []string
	for _, op := range ops {
		if op.ID < 0 {
			names = append(names, "the final state")
		} else {
			names = append(names, fmt.Sprintf("#%d", op.ID))
		}
	}
	return strings.Join(names, ", ")
}
