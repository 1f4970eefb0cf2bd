// Package dispatch allocates a driver to a booking: candidates near the
// pickup, nearest first, each tried with an atomic reservation until one
// succeeds. Pure: finding and reserving are interfaces.
package dispatch
