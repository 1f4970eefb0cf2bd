package verify

import "time"

// Outcome is what a client learned of an operation.
type Outcome string

// Outcomes.
const (
	// OK: the operation took effect (2xx), or the read is what it returned.
	OK Outcome = "ok"
	// Failed: the operation certainly did not take effect (a 4xx that
	// rejects it, or a 503 before anything was written).
	Failed Outcome = "failed"
	// Unknown: it may or may not have taken effect (a timeout, a dropped
	// connection, a 5xx after a write may have happened). The checker
	// treats it as possibly applied at any time between its invocation and
	// its Deadline (to the end of the run for an op recorded without one).
	Unknown Outcome = "unknown"
)

// Kind is what an operation does.
type Kind string

// Operation kinds: what riders and drivers do through the API.
const (
	CreateBooking Kind = "create_booking" // POST /v1/bookings
	ReadBooking   Kind = "read_booking"   // GET /v1/bookings/{id}
	CancelBooking Kind = "cancel_booking" // POST /v1/bookings/{id}/cancel
	Heartbeat     Kind = "heartbeat"      // PUT /v1/drivers/{id}/location
	DriverEvent   Kind = "driver_event"   // POST /v1/drivers/{id}/events (go_online, accept, decline, start_trip, end_trip)
	ReadDriver    Kind = "read_driver"    // GET /v1/drivers/{id}
)

// Op is one operation one client made, as recorded.
type Op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Kind   Kind   `json:"kind"`
	Event  string `json:"event,omitempty"` // DriverEvent: the driver event
	// Instance is the base URL of the Apollo instance the op was sent to.
	Instance string `json:"instance"`
	// BookingID, DriverID: the entities the op is about (a create's
	// booking ID is known before it is sent: a hash of rider and key).
	BookingID string `json:"booking_id,omitempty"`
	DriverID  string `json:"driver_id,omitempty"`
	// Invoke and Return are nanoseconds since the run's start.
	Invoke int64 `json:"invoke_ns"`
	Return int64 `json:"return_ns"`
	// Deadline (nanoseconds since the run's start; 0 for none) is when
	// the client stopped waiting, sent with a write as its
	// Apollo-Deadline: Apollo makes a write's changes before it or never.
	Deadline int64 `json:"deadline_ns,omitempty"`
	// Outcome, and what the API answered.
	Outcome    Outcome `json:"outcome"`
	Status     int     `json:"http_status"` // 0 when no answer arrived
	Code       string  `json:"error_code,omitempty"`
	NotApplied bool    `json:"not_applied,omitempty"` // a 5xx saying every write the request sent was refused
	// Seen is the state the answer reported (on OK), for booking and
	// driver ops alike.
	Seen State `json:"seen,omitzero"`
}

// State is what an answer says about a booking or a driver.
type State struct {
	// Booking: status (searching, allocated, accepted, unallocated,
	// cancelled), its driver and version. Driver: status (offline,
	// available, reserved, on_trip), its booking and version.
	Status    string `json:"status,omitempty"`
	DriverID  string `json:"driver_id,omitempty"`
	BookingID string `json:"booking_id,omitempty"`
	Accepted  bool   `json:"accepted,omitempty"`
	Withdrawn bool   `json:"withdrawn,omitempty"` // a driver backing out of its reservation
	Version   int64  `json:"version,omitempty"`
	// ReservedUntil for a reserved driver (unix ms), Deadline for a
	// booking (unix ms).
	ReservedUntil int64 `json:"reserved_until_ms,omitempty"`
	Deadline      int64 `json:"deadline_ms,omitempty"`
}

// FaultEvent is one nemesis action.
type FaultEvent struct {
	Kind   string `json:"kind"`   // one of FaultNames, or two joined by + (fault_joint.go)
	Fault  string `json:"fault"`  // the fault with its targets
	Action string `json:"action"` // inject or heal
	At     int64  `json:"at_ns"`  // since the run's start
	Err    string `json:"error,omitempty"`
	// Effect is what the fault did to the data, when it measures that
	// (a heal's event): what a minority primary took and lost, what a
	// restart of every node kept.
	Effect string `json:"effect,omitempty"`
}

// Denial is one entry of a node's ACL LOG: a command (Object) refused
// Count times, for Reason (command, key, channel), run at the top level,
// in a transaction (multi) or from a script (lua).
type Denial struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Context string `json:"context"`
	Object  string `json:"object"`
	Count   int64  `json:"count"`
}

// Final is the state read straight from the cluster's primaries once the
// workload and nemesis have stopped and the cluster is healthy.
type Final struct {
	At       time.Time        `json:"at"`
	Bookings map[string]State `json:"bookings"` // by booking ID; a booking not found is absent
	Drivers  map[string]State `json:"drivers"`
	// Rules is the Spampede rule set (its JSON) each instance serves, by instance name.
	Rules map[string]string `json:"rules"`
}

// History is a whole run.
type History struct {
	Start  time.Time    `json:"start"`
	Ops    []Op         `json:"ops"`
	Faults []FaultEvent `json:"faults"`
	Final  Final        `json:"final"`
	// ReservationTTL, ClaimHold, ScanEvery and AllocationTimeout are the
	// settings of the instances checked, which bound the slack of G4/G5.
	ReservationTTL    time.Duration `json:"reservation_ttl_ns"`
	AllocationTimeout time.Duration `json:"allocation_timeout_ns"`
	Slack             time.Duration `json:"slack_ns"`
	// Instances is how many apollo serve processes shared the work: with
	// one, an instance's fault stops all of it.
	Instances int `json:"instances,omitempty"`
	// ServeFlags are the flags the run added to every instance's serve
	// (--serve-flag): what was checked, when not the defaults.
	ServeFlags []string `json:"serve_flags,omitempty"`
	// Balancer: a request an instance refused the connection of went to
	// the next instance (Config.Balancer).
	Balancer bool `json:"balancer,omitempty"`
	// HostClockStep is how far this host's wall clock moved, over the run,
	// beyond the time that passed (wall minus monotonic time since Start,
	// read when the final state is): a step of the host's clock (NTP, a
	// virtual machine's resync) moves every Redis node's TIME and every
	// instance's time with it, and so every deadline read back, against
	// the run's monotonic timeline.
	HostClockStep time.Duration `json:"host_clock_step_ns,omitempty"`
	// Denials are what every node's ACL LOG held, at the end of the run,
	// for the instances' Redis user (apolloUser): each command, key or
	// channel refused it. Refused credentials (auth), which handshake and
	// password-rotation cause, are left out. A node restarted during the
	// run lost its log. ACLLogRead says the logs were read (an older
	// apollo verify did not).
	Denials    []Denial `json:"acl_denials,omitempty"`
	ACLLogRead bool     `json:"acl_log_read,omitempty"`
	// readLag is how stale a driver read may be (Options.DriverReadLag),
	// set by Check for the audits.
	readLag time.Duration
}

// clockStep is how far the wall clock moved since start beyond the time
// that passed, as read now.
func clockStep(start time.Time) time.Duration {
	now := time.Now()
	return now.Round(0).Sub(start.Round(0)) - now.Sub(start)
}
