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
// so an entry may be in any of them (the topology moved since, or no
// partition was beside its driver), and in the one key of earlier
// versions, which it still reads.
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

// reservedKeyOf is the partition a reservation of driver id is indexed
// in: the first, from the one of its slot's range on, that its driver's
// shard serves, so that the reservation needs no other shard (beside:
// true). Should none be (more shards than partitions, a shard with a few
// odd slots, a slot served by no one), the one of its slot's range.
func (s *Drivers) reservedKeyOf(id string) (key string, beside bool) {
	dk := driverKey(id)
	parts := s.reserved[:reservedPartitions]
	p := redisroute.Slot(dk) * reservedPartitions / 16384
	for i := range parts {
		if k := parts[(p+i)%len(parts)]; s.r.SameShard(dk, k) {
			return k, true
		}
	}
	return parts[p], false
}

// lapsedGrace is how long after a reservation's end the sweep leaves it to
// the booking's own expiry, which normally comes first.
const lapsedGrace = time.Second

// indexReservation writes the entry of reservation d, before it is made.
// Beside its driver, the primary's stream carries the entry to every
// replica that gets the reservation; on another shard, a failover there
// could lose an entry whose reservation stays, so it is acknowledged as
// the reservation will be.
func (s *Drivers) indexReservation(ctx context.Context, d driver.Driver) error {
	at := d.ReservedUntil.Add(lapsedGrace).UnixMilli()
	key, beside := s.reservedKeyOf(d.ID)
	cmd := redisroute.Write("ZADD", key, at, d.ID)
	if !beside {
		cmd.Acks = s.cfg.Acks
	}
	return storeErr(s.r.Exec(ctx, []redisroute.Cmd{cmd}).Err())
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
	// A partition on a primary that hangs answers nothing until the
	// deadline: the claims get half of what is left, the reads of what
	// the others gave the rest.
	cctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		defer cancel()
	}
	// limit split over the partitions, then what is left of it over
	// those that gave their share in full (a backlog, or the key of
	// earlier versions right after an upgrade).
	c := lapsedClaim{s: s, now: now, heldUntil: heldUntil}
	c.round(cctx, s.reserved, max(1, limit/len(s.reserved)))
	if left := limit - len(c.ids); left > 0 && len(c.full) > 0 {
		full := c.full[:min(left, len(c.full))]
		c.round(cctx, full, left/len(full))
	}
	ids, from, failed := c.ids, c.from, c.failed
	seen := map[string]bool{}
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

// lapsedClaim gathers the claims of one sweep, a round at a time.
type lapsedClaim struct {
	s         *Drivers
	now       time.Time
	heldUntil int64
	ids, from []string // each claimed driver, and the partition it was in
	full      []string // the partitions of the last round that gave all they were asked
	failed    []error
}

// round claims up to each entries of every partition in keys.
func (c *lapsedClaim) round(ctx context.Context, keys []string, each int) {
	cmds := make([]redisroute.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = c.s.claim.cmd(k, c.now.UnixMilli(), c.heldUntil, each)
	}
	c.full = nil
	for i, res := range c.s.claim.exec(ctx, c.s.r, cmds) {
		if res.Err != nil {
			c.failed = append(c.failed, fmt.Errorf("%s: %w", keys[i], storeErr(res.Err)))
			continue
		}
		vals, _ := res.Val.([]any)
		for _, v := range vals {
			if id, ok := v.(string); ok {
				c.ids, c.from = append(c.ids, id), append(c.from, keys[i])
			}
		}
		if len(vals) == each {
			c.full = append(c.full, keys[i])
		}
	}
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
