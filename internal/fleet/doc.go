// Package fleet shares the open-bookings partitions among the live
// instances of Apollo, so that N instances do the background allocation
// work of one, each on its own share.
//
// Every instance announces itself with a heartbeat; from the live members,
// ordered, each computes the same fair share (partition p belongs to the
// member ranked p mod n) and holds a lease on each partition of its share.
// A lease carries a fencing token: the store's claim of a partition's due
// bookings checks it, so an instance that lost a lease (it paused past the
// lease time) claims nothing from that partition any more. A member that
// stops hands its leases back and leaves at once; one that dies loses them
// when they expire, and the others take its share over then.
//
// Correctness never rests on the leases: two instances working one booking
// at once are kept apart by the claim's visibility window, and, if even
// that fails, by the driver reservation's compare-and-set and the
// booking's version check. The leases keep the work shared and its cost
// flat in the number of instances.
package fleet
