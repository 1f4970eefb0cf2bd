// Package sim is a synthetic city: a fleet of drivers that go on line, move
// and heartbeat, deterministic for a given seed. apollo dev runs it so that
// a fresh machine has live data to query.
package sim
