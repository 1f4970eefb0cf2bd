package verify

import "time"

// Verdict is what one check, or a whole report, concluded.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "pass" // checked, nothing wrong found
	Fail Verdict = "fail" // a violation found
	// Undecided: nothing wrong found, but not everything could be checked
	// in the time given (porcupine timed out on a partition).
	Undecided Verdict = "unknown"
	Skipped   Verdict = "skipped" // the history cannot be judged by it (no final state, or an older history without what it reads)
)

// Report is what Check found in a history. It is JSON-encodable.
type Report struct {
	Verdict    Verdict       `json:"verdict"`
	Checks     []CheckResult `json:"checks"`
	Counts     Counts        `json:"counts"`
	Violations []Violation   `json:"violations"`
	// Partitions lists the partitions porcupine did not find
	// linearizable (illegal, or undecided within the timeout).
	Partitions []PartitionResult `json:"partitions,omitempty"`
}

// CheckResult is one check's verdict.
type CheckResult struct {
	Name       string  `json:"name"`
	Verdict    Verdict `json:"verdict"`
	Detail     string  `json:"detail"`
	Violations int     `json:"violations"`
}

// Counts is how much was checked.
type Counts struct {
	Ops       int             `json:"ops"`
	ByOutcome map[Outcome]int `json:"by_outcome"`
	ByKind    map[Kind]int    `json:"by_kind"`
	// UnknownOpen is the writes of unknown outcome recorded without a
	// deadline (an older build, or an older history): the models keep
	// each open to the run's end, which can leave a partition undecided.
	UnknownOpen int `json:"unknown_open"`
	// Bookings and Drivers are the partitions porcupine checked; the
	// OpsChecked the operations given to it (the final state's stand-in
	// reads not counted), the rest telling the models nothing.
	Bookings          int `json:"booking_partitions"`
	Drivers           int `json:"driver_partitions"`
	BookingOpsChecked int `json:"booking_ops_checked"`
	DriverOpsChecked  int `json:"driver_ops_checked"`
	// Faults is how many faults the nemesis injected, FaultErrors how
	// many of its actions failed.
	Faults      int `json:"faults"`
	FaultErrors int `json:"fault_errors"`
	// ByFault is, per kind of fault in the order first injected, how often
	// it was injected, the operations begun while it lasted (inject to the
	// end of its heal) by outcome, and what it measured of its effect.
	ByFault []FaultCounts `json:"by_fault"`
}

// FaultCounts is one kind of fault's share of a run.
type FaultCounts struct {
	Kind     string `json:"kind"`
	Injected int    `json:"injected"`
	Ops      int    `json:"ops"`
	OK       int    `json:"ok"`
	Failed   int    `json:"failed"`
	Unknown  int    `json:"unknown"`
	// Unavailable is those answered 5xx or not at all: what the fault
	// cost in availability, apart from the workload's own refusals (a
	// driver's event out of turn is a 409 with or without a fault).
	Unavailable int      `json:"unavailable"`
	Effects     []string `json:"effects,omitempty"`
}

// PartitionResult is porcupine's verdict on one booking or driver.
type PartitionResult struct {
	Model   string        `json:"model"` // booking or driver
	Key     string        `json:"key"`   // its ID
	Ops     int           `json:"ops"`
	Verdict Verdict       `json:"verdict"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// File is the HTML view of the partition (porcupine's
	// visualization), written when it is not linearizable.
	File string `json:"file,omitempty"`
}

// Violation is one broken guarantee, with what it is about.
type Violation struct {
	Code      string   `json:"code"`
	Message   string   `json:"message"`
	Ops       []int    `json:"ops,omitempty"`
	Bookings  []string `json:"bookings,omitempty"`
	Drivers   []string `json:"drivers,omitempty"`
	Instances []string `json:"instances,omitempty"`
	File      string   `json:"file,omitempty"`
	// Faults names the faults that lasted within 2 s of the violation's
	// operations: what it happened beside, for the reader.
	Faults []string `json:"faults_near,omitempty"`
}
