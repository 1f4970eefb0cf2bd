// Package drill runs failure drills: a steady read load against a Redis
// Cluster, a fault injected at a set time, and a per-second timeline of
// what the callers saw, summarised against an SLO.
//
// Faults are values behind a small interface (inject, heal), so the same
// drill can crash, hang or slow any node, and the same load can be pointed
// at Apollo's router or at a baseline client for a side-by-side figure.
package drill
