package spike

import "time"

// Report is the outcome of a spike drill: one Run per mode, the no-spike
// baseline first.
type Report struct {
	Settings Settings `json:"settings"`
	Hotspot  Hotspot  `json:"hotspot"`
	Runs     []Run    `json:"runs"`
	Summary  []Line   `json:"summary"`
}

// Settings echo what the drill ran with.
type Settings struct {
	Seed               uint64        `json:"seed"`
	Rounds             int           `json:"rounds"`
	Duration           time.Duration `json:"duration_ns"`
	StormStart         time.Duration `json:"storm_start_ns"`
	StormEnd           time.Duration `json:"storm_end_ns"`
	BaseRate           float64       `json:"base_rate"`
	SpikeMultiplier    float64       `json:"spike_multiplier"`
	Drivers            int           `json:"drivers"`
	AllocationTimeout  time.Duration `json:"allocation_timeout_ns"`
	AllocCost          time.Duration `json:"alloc_cost_ns"`
	AllocSlots         int           `json:"alloc_slots"`
	Workers            int           `json:"workers"`
	CountAt            string        `json:"count_at"`
	CountRejectedEvery int           `json:"count_rejected_every"`
	CellBits           uint          `json:"cell_bits"`
	BucketSeconds      int           `json:"bucket_seconds"`
	Threshold          int           `json:"threshold"`
	HoldDownSeconds    int           `json:"hold_down_seconds"`
	Primaries          int           `json:"primaries"`
	Replicas           int           `json:"replicas"`
	Outage             *Window       `json:"outage,omitempty"`
	Instances          int           `json:"instances,omitempty"`
	Crash              *Window       `json:"crash,omitempty"` // the crashed instance was down
}

// Window is a span of the run, in seconds since it began.
type Window struct {
	From float64 `json:"from_s"`
	To   float64 `json:"to_s"`
}

// Hotspot is where the storm hits, and the Spampede cells it touches.
type Hotspot struct {
	Lat     float64 `json:"lat"`
	Lng     float64 `json:"lng"`
	RadiusM float64 `json:"radius_m"`
	Cells   []Box   `json:"cells"` // cells the circle overlaps: more than one means it straddles edges
}

// Box is a cell's bounds.
type Box struct {
	Cell   string  `json:"cell"`
	MinLat float64 `json:"min_lat"`
	MaxLat float64 `json:"max_lat"`
	MinLng float64 `json:"min_lng"`
	MaxLng float64 `json:"max_lng"`
}

// Run is one mode on its own fresh cluster.
type Run struct {
	Name  string `json:"name"` // baseline, off, shadow, on, outage; " #2" and on in later rounds
	Round int    `json:"round"`
	Mode  string `json:"mode"` // Spampede mode: off, shadow, on
	Storm bool   `json:"storm"`
	// StartUnixMs is when the run began: Spampede's buckets follow the
	// wall clock, so this places their boundaries on the timeline.
	StartUnixMs int64    `json:"start_unix_ms"`
	Seconds     []Second `json:"seconds"`
	// Storm-window totals (the whole run for the baseline: same window).
	Inside  Counts `json:"inside"`
	Outside Counts `json:"outside"`
	// OutsideSettled is the storm once its first allocation timeout has
	// passed: what is left when the bookings admitted before the filter
	// could react have been given up.
	OutsideSettled Counts `json:"outside_settled"`
	// FirstTripAfter is from the storm's start to the first hotspot
	// booking of the storm that got a driver; negative: none did.
	FirstTripAfter time.Duration `json:"first_trip_after_ns"`
	RedisCmds      int64         `json:"redis_cmds"`
	Grid           []CellStat    `json:"grid"`
	Errors         []string      `json:"errors,omitempty"` // a sample of unexpected errors
	Crash          *CrashResult  `json:"crash,omitempty"`  // the instance-crash variant
}

// Second is what happened to the bookings requested in one second.
type Second struct {
	T         int     `json:"t"` // seconds since the run began
	Inside    Counts  `json:"inside"`
	Outside   Counts  `json:"outside"`
	RedisCmds float64 `json:"redis_cmds_per_s"`
}

// Counts are the fates of a set of booking requests.
type Counts struct {
	Requested   int `json:"requested"`
	Admitted    int `json:"admitted"`
	Rejected    int `json:"rejected"`     // turned away by Spampede (429)
	WouldReject int `json:"would_reject"` // shadow: admitted, but would have been turned away
	FailOpen    int `json:"fail_open"`    // admitted because the counters did not answer (and maybe failed later)
	Failed      int `json:"failed"`       // admitted, but the pipeline could not store it (503)
	Allocated   int `json:"allocated"`    // got a driver
	Unallocated int `json:"unallocated"`  // none before the deadline
	Pending     int `json:"pending"`      // still searching when the run ended
	// Latency of the booking call, and time from request to driver, ms.
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	AllocP50   float64 `json:"alloc_p50_ms"`
	AllocP99   float64 `json:"alloc_p99_ms"`
	// How long the failed requests took to fail, ms.
	FailedP99 float64 `json:"failed_p99_ms"`
}

// Success is the share of requests that got a driver.
func (c Counts) Success() float64 {
	if c.Requested == 0 {
		return 0
	}
	return float64(c.Allocated) / float64(c.Requested)
}

// CellStat is one Spampede cell near the hotspot, for the map.
type CellStat struct {
	Box
	Requested   int `json:"requested"`
	Rejected    int `json:"rejected"`
	Unallocated int `json:"unallocated"`
	Allocated   int `json:"allocated"`
	Trips       int `json:"trips"` // drivers who started a trip from a pickup in the cell
}

// Line compares one run's outside-hotspot riders with its round's
// baseline, or, over several rounds, every round's riders of one kind of
// run pooled with every round's baseline riders pooled.
type Line struct {
	Run             string  `json:"run"`
	Rounds          int     `json:"rounds"` // runs pooled in the line`
	OutsideSuccess  float64 `json:"outside_success"`
	SuccessVsBase   float64 `json:"success_vs_baseline"` // relative change, e.g. -0.12
	OutsideP99      float64 `json:"outside_latency_p99_ms"`
	P99VsBase       float64 `json:"p99_vs_baseline"`
	OutsideAllocP99 float64 `json:"outside_alloc_p99_ms"`
	InsideRejected  int     `json:"inside_rejected"`
	InsideWould     int     `json:"inside_would_reject"`
	Within5Pct      bool    `json:"within_5pct"` // success and p99 both within 5 % of the baseline
	// The same comparison once the storm's first allocation timeout has passed.
	SettledSuccessVsBase float64 `json:"settled_success_vs_baseline"`
	SettledP99           float64 `json:"settled_outside_latency_p99_ms"`
	SettledP99VsBase     float64 `json:"settled_p99_vs_baseline"`
	SettledWithin5Pct    bool    `json:"settled_within_5pct"`
	// The mean over the pooled runs; FirstTripAfter negative: no trip.
	FirstTripAfter time.Duration `json:"first_trip_after_ns"`
	RedisCmds      int64         `json:"redis_cmds"`
}
