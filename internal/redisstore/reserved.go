package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// The reserved-drivers index, so that a reservation no booking holds can
// be found and freed (booking's sweep):
//
//	apollo:drv:reserved:{<tag>}  zset  drivers reserved (or once reserved), scored by
//	                                   when the sweep should look at them (ms)
//
// It has reservedPartitions partitions, spread over the slot range as the
// open-bookings index's are (Partitions), and a reservation is indexed in
// one on its driver's own shard. Until 2026-12-06 it was one key on one
// shard, written before every reservation: while that shard's primary
// hung or failed over, no driver of any shard could be reserved, and
// every allocation of the fleet failed. The sweep reads every partition,
// so an entry may be in any of them (the topology moved, or a router
// without the topology: the partition of the driver's slot range), and
// in the one key of earlier versions, which it still reads.
const legacyReservedKey = "apollo:drv:reserved"

// reservedPartitions is how many partitions the index has: enough that
// each shard of a cluster of up to a few dozen holds one, few enough that
// a sweep reads them all in one round trip per shard.
const reservedPartitions = 32

// reservedKeys names the index's partitions; the last is the key of
// earlier versions, read by the sweep and never written.
func reservedKeys() []string {
	ps, _ := NewPartitions(reservedPartitions) // a count in range
	keys := make([]string, 0, reservedPartitions+1)
	for p := range reservedPartitions {
		keys = append(keys, "apollo:drv:reserved:{"+ps.tags[p]+"}")
	}
	return append(keys, legacyReservedKey)
}

// shardMates is what knows which keys one shard serves: the router.
type shardMates interface {
	SameShard(a, b string) bool
}

// reservedKeyOf is the partition a reservation of driver id is indexed
// in: the first, from the one of its slot's range on, that its driver's
// shard serves, so that the reservation needs no other shard.
func (s *Drivers) reservedKeyOf(id string) string {
	dk := driverKey(id)
	parts := s.reserved[:reservedPartitions]
	p := redisroute.Slot(dk) * reservedPartitions / 16384
	if m, ok := s.r.(shardMates); ok {
		for i := range parts {
			if k := parts[(p+i)%len(parts)]; m.SameShard(dk, k) {
				return k
			}
		}
	}
	return parts[p]
}

// lapsedGrace is how long after a reservation's end the sweep leaves it to
// the booking's own expiry, which normally comes first.
const lapsedGrace = time.Second

func (s *Drivers) indexReservation(ctx context.Context, d driver.Driver) error {
	at := d.ReservedUntil.Add(lapsedGrace).UnixMilli()
	return storeErr(s.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZADD", s.reservedKeyOf(d.ID), at, d.ID)}).Err())
}

// ClaimLapsed returns up to limit drivers still reserved past their
// reservation's end (plus a grace), and makes each due again at now+hold
// in the index. Entries of drivers no longer reserved are dropped; those of
// drivers reserved again since are moved to the new reservation's end.
// Records are read from primaries: a replica's stale "not reserved" would
// drop the entry of a reservation that still exists. Partitions that
// cannot be read are left for the next sweep: it returns what the others
// hold, with an error naming the ones that failed.
func (s *Drivers) ClaimLapsed(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]driver.Driver, error) {
	heldUntil := now.Add(hold).UnixMilli()
	each := max(1, (limit+reservedPartitions-1)/reservedPartitions)
	claims := make([]redisroute.Cmd, len(s.reserved))
	for i, k := range s.reserved {
		claims[i] = s.claim.cmd(k, now.UnixMilli(), heldUntil, each)
	}
	// A partition on a primary that hangs answers nothing until the
	// deadline: the claims get half of what is left, the reads of what
	// the others gave the rest.
	cctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		defer cancel()
	}
	var failed []error
	var ids, from []string // each claimed driver, and the partition it was in
	seen := map[string]bool{}
	for i, res := range s.claim.exec(cctx, s.r, claims) {
		if res.Err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", s.reserved[i], storeErr(res.Err)))
			continue
		}
		vals, _ := res.Val.([]any)
		for _, v := range vals {
			if id, ok := v.(string); ok {
				ids, from = append(ids, id), append(from, s.reserved[i])
			}
		}
	}
	reads := make([]redisroute.Cmd, len(ids))
	for i, id := range ids {
		reads[i] = readDriver(id, true)
	}
	var lapsed []driver.Driver
	var drop, move []redisroute.Cmd
	for i, r := range s.r.Exec(ctx, reads) {
		if r.Err != nil {
			continue // due again after the hold
		}
		d, _, found, err := decodeDriver(r.Val)
		switch {
		case err != nil:
			continue
		case !found || d.Status != driver.StatusReserved:
			drop = append(drop, s.zremIf.cmd(from[i], ids[i], heldUntil))
		case now.Before(d.ReservedUntil.Add(lapsedGrace)):
			move = append(move, redisroute.Write("ZADD", from[i], "XX", d.ReservedUntil.Add(lapsedGrace).UnixMilli(), ids[i]))
		case !seen[d.ID]: // indexed in two partitions: one sweep of it
			seen[d.ID] = true
			lapsed = append(lapsed, d)
		}
	}
	// Best effort: an entry not tidied now is claimed again after the hold.
	s.zremIf.exec(ctx, s.r, drop)
	s.r.Exec(ctx, move)
	if len(failed) > 0 {
		return lapsed, fmt.Errorf("%d of %d partitions of the reserved-drivers index unread: %w", len(failed), len(s.reserved), errors.Join(failed...))
	}
	return lapsed, nil
}

// ReservedIndex lists the reserved-drivers index with its scores (the
// latest of an entry in two partitions), for tests and tools.
func (s *Drivers) ReservedIndex(ctx context.Context) (map[string]time.Time, error) {
	reads := make([]redisroute.Cmd, len(s.reserved))
	for i, k := range s.reserved {
		reads[i] = redisroute.Cmd{Args: []any{"ZRANGE", k, 0, -1, "WITHSCORES"}, Key: k, Fresh: true}
	}
	out := map[string]time.Time{}
	for _, res := range s.r.Exec(ctx, reads) {
		if res.Err != nil {
			return nil, storeErr(res.Err)
		}
		vals, _ := res.Val.([]any)
		for i := 0; i+1 < len(vals); i += 2 {
			id, _ := vals[i].(string)
			ms, _ := strconv.ParseFloat(fmt.Sprint(vals[i+1]), 64)
			if at := time.UnixMilli(int64(ms)); at.After(out[id]) {
				out[id] = at
			}
		}
	}
	return out, nil
}
