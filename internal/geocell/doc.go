// Package geocell maps points to geohash-integer cells and instants to
// fixed time buckets: the two keys the Spampede demand-spike filter counts
// bookings by, and the grid that nearby-driver search walks.
//
// # Cells
//
// A [Cell] is an integer geohash with an explicit precision in bits. The
// bits interleave longitude and latitude, longitude first, so a cell of b
// bits is ceil(b/2) longitude halvings by floor(b/2) latitude halvings.
// Odd precisions give cells that are square in degrees; even precisions
// give cells twice as wide as they are tall. Both are allowed: odd bits
// suit a filter that wants square-ish areas, even bits match the classic
// 5-bit-per-character string geohash when b is a multiple of 10. Rough
// sizes at the equator (height × width; width shrinks with cos(lat)):
//
//	bits  cell
//	  24  4.9 km × 9.8 km
//	  25  4.9 km × 4.9 km
//	  26  2.4 km × 4.9 km
//	  28  1.2 km × 2.4 km
//	  30  611 m × 1.2 km   (= 6-character geohash)
//	  32  305 m × 611 m
//	  40   19 m ×  38 m    (= 8-character geohash)
//	  52  0.3 m × 0.6 m
//
// Precision is limited to [MinBits, MaxBits] = [1, 52]. 52 bits is what
// Redis GEO uses, and it keeps every hash exactly representable as a float64,
// which matters because Redis Lua numbers are doubles.
//
// Dropping low bits ([Cell.Reduce]) yields the enclosing coarser cell, so a
// counter can be kept at one precision and a hotspot that straddles a cell
// edge can be caught either by summing neighbours ([Cell.Neighbors],
// [CellsWithin]) or by looking one level coarser.
//
// # Time buckets
//
// [Bucket] numbers fixed windows as floor(unix seconds / size). A counter
// keyed by bucket resets at every boundary; [BucketProgress] says how far
// into the current bucket an instant is, so a caller can weight the
// previous bucket by (1 - progress) and smooth that cliff without keeping a
// true sliding window.
//
// Everything here is pure: no I/O, no clocks, no package state.
package geocell
