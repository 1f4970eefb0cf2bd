// Package spampede is the demand-spike filter at the very start of the
// booking pipeline. A pickup becomes a geohash cell at reduced precision
// and the time a bucket; unallocated bookings are counted per (service,
// cell, bucket); when a cell is over its threshold, new bookings there are
// turned away before any downstream call, so a rainstorm in one district
// cannot degrade bookings everywhere.
//
// Beyond Grab's original filter:
//   - the count of a cell is the count of its 3 × 3 block of cells (each
//     unallocated booking is recorded in its cell and its 8 neighbours), so a
//     hotspot straddling a cell edge still trips, and admission reads one key;
//   - the previous bucket is weighted by how much of it still falls in the
//     last bucket-length of time, so counts do not drop to zero at every
//     bucket boundary, and a tripped cell stays tripped for a hold-down time;
//   - tripped cells are cached in memory, so a rejection costs no round trip;
//   - shadow rules only report what they would reject;
//   - if the counter store is slow or down the filter admits, within its
//     deadline, and counts it: it never rejects everyone because Redis is down.
//
// The package is pure: the counter store and the metrics are interfaces
// implemented elsewhere (redisstore, app).
package spampede
