// Package driver is the Apollo domain: a driver, the states it moves
// through, which moves are legal, and when a driver counts as available.
//
// It is pure: Apply and the Rules take the current time as an argument and
// never touch storage. Storage applies the same rules atomically (one Lua
// script per transition on the driver's hash), comparing Version so that
// two bookings can never both reserve one driver.
//
// # State machine
//
//	              go_online                 reserve(b, until)
//	+---------+  ----------->  +-----------+  -------------->  +----------+  accept(b)
//	| offline |                | available |                   | reserved | ---------+
//	+---------+  <-----------  +-----------+  <--------------  +----------+ <--------+
//	              go_offline         ^         decline(b)           |     sets Accepted
//	                                 |         expire(b)            |
//	                                 |         [now >= ReservedUntil]
//	                                 |                              |
//	                                 |  end_trip(b)  +---------+    |  start_trip(b)
//	                                 +-------------- | on_trip | <--+  [Accepted,
//	                                                 +---------+        now < ReservedUntil]
//
// back_out(b) withdraws an accept and keeps the reservation (reserved,
// Accepted → reserved): the booking pipeline sends it first when a driver
// who accepted declines, so that no trip can start while the booking lets
// go; the decline then frees the driver. Drivers' apps cannot send it.
//
// Every other (status, event) pair is illegal and fails with a
// *TransitionError. b is the booking the driver holds: an event naming any
// other fails with ErrWrongBooking, so a late expiry or decline for an
// earlier booking cannot cancel a newer reservation of the same driver.
//
// Accepting extends nothing: an accepted reservation still lapses at
// ReservedUntil unless the trip has started, so whoever reserves picks an
// Until that covers both the offer and the drive to the pickup. From
// ReservedUntil on, accept and start_trip fail with ErrReservationExpired and
// only decline or expire are left.
//
// # Availability
//
// A driver is available for a service when it is in status available,
// offers the service and has sent a heartbeat within Rules.StaleAfter.
// Heartbeats update the location and LastHeartbeat but not Version, so they
// never conflict with a concurrent reservation.
package driver
