// Package capacity measures what Apollo asks of Redis, on a real local
// cluster: how the background booking work of a fleet grows with the
// number of instances (it must not), and how evenly the partitioned
// open-bookings index spreads over the shards.
package capacity
