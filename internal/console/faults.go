package console

import (
	"context"
	"errors"
)

// Faults breaks things on purpose, under apollo dev only: a newcomer
// kills or hangs a Redis node, or starts a rainstorm, and watches the
// console show Apollo riding it out.
type Faults interface {
	// View is the fault panel's state.
	View() FaultsView
	// Node does action (NodeKill, NodeHang or NodeResume) to the node at addr.
	Node(ctx context.Context, action, addr string) error
	// Rainstorm starts (on) or stops a storm of bookings over one area.
	Rainstorm(ctx context.Context, on bool) error
}

// Node actions.
const (
	NodeKill   = "kill"   // SIGKILL: connections refused
	NodeHang   = "hang"   // SIGSTOP: connections accepted, nothing answered
	NodeResume = "resume" // SIGCONT a hung node; restart a killed one
)

// Errors a Faults returns for bad input; the console answers them 400 and 404.
var (
	ErrUnknownAction = errors.New("console: unknown fault action")
	ErrUnknownNode   = errors.New("console: no such node in this cluster")
)

// FaultsView is what the fault panel shows.
type FaultsView struct {
	Nodes     []FaultNode   `json:"nodes"`
	Rainstorm RainstormView `json:"rainstorm"`
	// Reads are the dev rider app's batch reads through every instance's
	// API: what a newcomer watches not fail.
	Reads ReadsView `json:"reads"`
}

// ReadsView counts the rider app's reads.
type ReadsView struct {
	Sent   int64 `json:"sent"`
	OK     int64 `json:"ok"`     // answered 200
	Failed int64 `json:"failed"` // answered otherwise, or not answered
}

// FaultNode is a Redis process of the dev cluster.
type FaultNode struct {
	Addr  string `json:"addr"`
	Shard int    `json:"shard"`
	// Process is what was last done to it: running, paused or stopped.
	Process string `json:"process"`
}

// RainstormView is the rainstorm: where, how hard, and what it got.
type RainstormView struct {
	On        bool    `json:"on"`
	Lat       float64 `json:"lat"`
	Lng       float64 `json:"lng"`
	RadiusM   float64 `json:"radius_m"`
	PerSecond float64 `json:"per_second"`
	Sent      int64   `json:"sent"`
	Created   int64   `json:"created"`
	Rejected  int64   `json:"rejected"` // turned away by Spampede (429)
	Failed    int64   `json:"failed"`
}
