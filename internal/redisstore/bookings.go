package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Booking keys:
//
//	apollo:bk:{<id>}    hash  json (the booking), v (version)
//
// and the open-bookings index, partitioned (see Partitions).
func bookingKey(id string) string { return "apollo:bk:{" + id + "}" }

// bookingTTL: bookings are kept a week, then Redis drops them.
const bookingTTL = 7 * 24 * time.Hour

// createBookingScript stores a booking unless one with its ID exists
// (an idempotent retry): {1, json} when created, {0, stored json} if not.
const createBookingScript = `
local cur = redis.call('HGET', KEYS[1], 'json')
if cur then return {0, cur} end
redis.call('HSET', KEYS[1], 'json', ARGV[1], 'v', 1)
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, ARGV[1]}
`

// updateBookingScript writes a booking only if its version is the one the
// caller read: {1} or {0, current version}.
const updateBookingScript = `
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '-1')
if v ~= tonumber(ARGV[1]) then return {0, v} end
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'v', v + 1)
return {1, v + 1}
`

// withdrawScript deletes the booking one create attempt stored, ARGV[1]
// being the record that attempt wrote (version 1, its own times), unless a
// retry has kept it (see keepScript): 1 if deleted. Another attempt's
// record (a retry that created the booking anew on a primary promoted
// without the first one's) or a version moved on is left alone.
const withdrawScript = `
if redis.call('HGET', KEYS[1], 'json') ~= ARGV[1] or redis.call('HEXISTS', KEYS[1], 'kept') == 1 then return 0 end
redis.call('DEL', KEYS[1])
return 1
`

// keepScript marks a stored booking kept, so that no withdrawal deletes it
// from now on, and returns it: {json, version}, or false if there is none.
// Its version is deleted and set again first: a node at its maxmemory
// refuses a script only before its first write, and a delete is allowed
// there (as a confirmed read's fence does), so a retry still finds its
// booking on a full primary.
const keepScript = `
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return false end
redis.call('HDEL', KEYS[1], 'v')
redis.call('HSET', KEYS[1], 'v', v, 'kept', 1)
return redis.call('HMGET', KEYS[1], 'json', 'v')
`

// claimOpenScript is claimScript on a partition of the open index
// (KEYS[1]) for the holder of its lease (KEYS[2]) with token ARGV[4]:
// false, and nothing claimed, if the lease carries another token. An
// empty token claims unfenced.
const claimOpenScript = `
if ARGV[4] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[4] then return false end
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return ids
`

// Bookings implements booking.Store on Redis.
type Bookings struct {
	r        router
	ps       Partitions
	create   script
	update   script
	claim    script
	withdraw script
	keep     script
	forgetIf script // an open-index entry removed only at the score given
	// Acks is how many replicas must acknowledge a new booking before it is
	// reported as created (WAIT); 0 on a cluster without replicas.
	acks int
	// watch serves the long polls (see Watch).
	watch watchHub
}

// NewBookings returns the booking store, its open index split into the
// partitions ps; acks replicas must confirm writes.
func NewBookings(r router, acks int, ps Partitions) *Bookings {
	b := &Bookings{r: r, ps: ps, create: newGuardedScript(createBookingScript), update: newGuardedScript(updateBookingScript),
		claim: newScript(claimOpenScript), withdraw: newGuardedScript(withdrawScript),
		keep: newGuardedScript(keepScript), forgetIf: newScript(zremIfScoreScript), acks: acks}
	b.watch.sub, _ = r.(subscriber)
	return b
}

// Partitions is how the open index is split.
func (s *Bookings) Partitions() Partitions { return s.ps }

// Create stores b (version 1) unless its ID exists. A write the replicas
// did not confirm is an error (booking.ErrUnconfirmed, with
// redisroute.ErrUnconfirmed, inside ErrUnavailable): the booking is on the
// primary but could be lost in a failover, so it is not reported as
// created (and the pipeline withdraws it).
func (s *Bookings) Create(ctx context.Context, b booking.Booking) (booking.Booking, bool, error) {
	b.Version = 1
	raw, err := json.Marshal(b)
	if err != nil {
		return b, false, err
	}
	// The open index first: the two keys live in different slots, so they
	// cannot be written atomically, and a booking stored but never indexed
	// would never be scanned (searching forever). An index entry without a
	// booking is harmless: the scan finds nothing and forgets it. Confirmed
	// like the booking: an entry a failover undoes strands its booking.
	// The caller makes the entry due only once ctx's deadline has passed
	// (booking.Service.Create): a scan that claimed it before the record
	// was written would find no booking and forget it. GT: a retry with the
	// same ID, its own entry written while this attempt's record may still
	// land, must not bring the entry due sooner, as its shorter deadline
	// would; the entry comes due after every attempt's deadline.
	entry := redisroute.Write("ZADD", s.ps.openKeyOf(b.ID), "GT", dueOf(b).UnixMilli(), b.ID)
	entry.Acks = s.acks
	if err := s.r.Exec(ctx, []redisroute.Cmd{entry}).Err(); err != nil {
		return b, false, storeErr(err)
	}
	cmd := s.create.cmd(bookingKey(b.ID), string(raw), int64(bookingTTL/time.Second))
	cmd.Acks = s.acks
	res := s.create.exec(ctx, s.r, []redisroute.Cmd{cmd})[0]
	unconfirmed := errors.Is(res.Err, redisroute.ErrUnconfirmed)
	if res.Err != nil && !unconfirmed {
		return b, false, storeErr(res.Err)
	}
	reply, _ := res.Val.([]any)
	if len(reply) != 2 {
		return b, false, fmt.Errorf("create booking: unexpected reply %v", res.Val)
	}
	if created, _ := reply[0].(int64); created != 1 {
		return s.existing(ctx, b.ID)
	}
	if unconfirmed {
		return b, false, fmt.Errorf("%w: %w", booking.ErrUnconfirmed, storeErr(res.Err))
	}
	stored, err := decodeBooking(reply[1])
	if err != nil {
		return b, false, err
	}
	// Again after the write: a scan that ran between the two writes may
	// have forgotten the entry. Even when the caller's deadline has just
	// run out (a failover held the record's write): the record is
	// written, and an entry is all that makes the workers advance it.
	s.index(context.WithoutCancel(ctx), stored, time.Time{}, false)
	return stored, true, nil
}

// existing is the booking a create found already stored (an idempotent
// retry). The script wrote nothing, so the WAIT after it confirmed nothing:
// the booking is kept (see Keep), which confirms it, before it is
// returned. A failure is never booking.ErrUnconfirmed, on which the
// pipeline withdraws what it takes for its own new write: this booking may
// have been reported created.
func (s *Bookings) existing(ctx context.Context, id string) (booking.Booking, bool, error) {
	stored, err := s.Keep(ctx, id)
	if errors.Is(err, booking.ErrNotFound) {
		// Withdrawn between the two: the retry may try again.
		return stored, false, fmt.Errorf("%w: booking %s was withdrawn while it was created again", ErrUnavailable, id)
	}
	return stored, false, err
}

// Get reads a booking from its primary (read-your-writes for the rider),
// confirmed by as many replicas as a write (see redisroute.Cmd.Acks): what
// it returns is no write a failover can undo, and a primary cut off from
// its replicas, already replaced on the other side of a partition, cannot
// answer it with the booking as it was before the other side changed it.
func (s *Bookings) Get(ctx context.Context, id string) (booking.Booking, error) {
	key := bookingKey(id)
	res := s.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"HMGET", key, "json", "v"}, Key: key, Fresh: true, Acks: s.acks}})[0]
	return storedBooking(id, res)
}

// storedBooking is the booking in a reply of {json, version}: Get's and
// Keep's. booking.ErrNotFound when the reply has none.
func storedBooking(id string, res redisroute.Result) (booking.Booking, error) {
	if res.Err != nil {
		return booking.Booking{}, storeErr(res.Err)
	}
	vals, _ := res.Val.([]any)
	if len(vals) != 2 || vals[0] == nil {
		return booking.Booking{}, fmt.Errorf("booking %s: %w", id, booking.ErrNotFound)
	}
	b, err := decodeBooking(vals[0])
	if err != nil {
		return b, err
	}
	b.Version = toInt(vals[1])
	return b, nil
}

// Keep returns a stored booking for an idempotent retry, after marking it
// kept: its first attempt, unacknowledged, withdraws it after answering,
// and a retry may have found it and reported it in between; a kept booking
// is never withdrawn. The mark is a write acknowledged like a create and
// proven against every replica, so what is returned is confirmed as Get's
// answer is. booking.ErrNotFound if there is none. An unacknowledged mark
// is ErrUnavailable, never booking.ErrUnconfirmed (on which the pipeline
// withdraws its own write): the booking may have been reported created.
func (s *Bookings) Keep(ctx context.Context, id string) (booking.Booking, error) {
	cmd := s.keep.cmd(bookingKey(id))
	cmd.Acks = s.acks
	b, err := storedBooking(id, s.keep.exec(ctx, s.r, []redisroute.Cmd{cmd})[0])
	if err == nil && b.Status.Open() {
		// Indexed again if a scan forgot its entry before its first
		// attempt's own second indexing (which a failed attempt skips);
		// NX: an entry a claim or a backoff moved keeps its time.
		s.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZADD", s.ps.openKeyOf(b.ID), "NX", dueOf(b).UnixMilli(), b.ID)})
	}
	return b, err
}

// Exists says whether the booking is on its primary: a plain read, not
// confirmed (see booking.Store.Exists), and a single command.
func (s *Bookings) Exists(ctx context.Context, id string) (bool, error) {
	key := bookingKey(id)
	res := s.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"EXISTS", key}, Key: key, Fresh: true}})[0]
	if res.Err != nil {
		return false, storeErr(res.Err)
	}
	n, _ := res.Val.(int64)
	return n == 1, nil
}

// Update writes next if the stored version is still old's, and keeps the
// open-bookings index in step. The write must be acknowledged by as many
// replicas as a create: one that fewer acknowledged is reported as
// booking.ErrUnconfirmed (it may or may not last a failover), never as done.
// A booking that reopens (its driver backed out of it) has no index entry:
// one is written first, as Create does, and confirmed like it; if it
// cannot be, nothing is. Written only after the record, best effort, a
// lost entry left the booking searching with nothing to advance it.
func (s *Bookings) Update(ctx context.Context, old, next booking.Booking) error {
	next.Version = old.Version + 1
	raw, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if !old.Status.Open() && next.Status.Open() {
		entry := s.openEntry(next)
		entry.Acks = s.acks
		if err := s.r.Exec(ctx, []redisroute.Cmd{entry}).Err(); err != nil {
			return storeErr(err)
		}
	}
	cmd := s.update.cmd(bookingKey(old.ID), old.Version, string(raw))
	cmd.Acks = s.acks
	res := s.update.exec(ctx, s.r, []redisroute.Cmd{cmd})[0]
	reply, _ := res.Val.([]any)
	unconfirmed := errors.Is(res.Err, redisroute.ErrUnconfirmed)
	if res.Err != nil && !unconfirmed {
		return storeErr(res.Err)
	}
	if len(reply) < 1 {
		return fmt.Errorf("update booking: unexpected reply %v", res.Val)
	}
	if ok, _ := reply[0].(int64); ok != 1 {
		// Nothing was written, acknowledged or not.
		return fmt.Errorf("booking %s: %w (%w)", old.ID, booking.ErrConflict, ErrConflict)
	}
	if unconfirmed {
		// The index is left as it is: the booking is read again when due.
		return fmt.Errorf("booking %s: %w: %w", old.ID, booking.ErrUnconfirmed, storeErr(res.Err))
	}
	// The record is written: its index entry and notice follow even when
	// the caller's deadline (an allocation's is its reservation's end) or
	// patience has just run out. They are derived, unguarded writes.
	s.index(context.WithoutCancel(ctx), next, dueOf(old), true)
	return nil
}

// index adds an open booking to the open index, or removes a closed one,
// and with announce tells the partition's channel that it changed (for
// the long polls, see Watch), in the same round trip: the entry and the
// channel share the partition's slot. Best effort: the scan re-reads
// every booking it finds in the index, and a long poll reads the booking
// again when it ends.
//
// Sent after the record, these writes may land late (an instance paused
// in between, the router's fresh timeout when it resumes): an entry added
// late is put right by the scan, a removal landing late is not. A final
// booking's entry goes whenever it lands: a final booking never opens
// again. An accepted one's may be the entry of the booking reopened since
// (its driver backed out), so it is removed only if still due at was, as
// the booking's previous version left it; otherwise the scan forgets it
// when it comes due (Forget, at the score its claim gave it).
func (s *Bookings) index(ctx context.Context, b booking.Booking, was time.Time, announce bool) {
	cmd := s.openEntry(b)
	switch {
	case b.Status.Final():
		cmd = s.forget(b.ID)
	case !b.Status.Open():
		cmd = s.forgetIf.cmd(s.ps.openKeyOf(b.ID), b.ID, was.UnixMilli())
	}
	cmds := []redisroute.Cmd{cmd}
	if announce {
		cmds = append(cmds, redisroute.Write("SPUBLISH", s.ps.channel(s.ps.Of(b.ID)), b.ID))
	}
	s.forgetIf.exec(ctx, s.r, cmds) // the others are no script: NOSCRIPT resends only it
}

// openEntry indexes an open booking at the time it is due next (its
// deadline if it has none).
func (s *Bookings) openEntry(b booking.Booking) redisroute.Cmd {
	return redisroute.Write("ZADD", s.ps.openKeyOf(b.ID), dueOf(b).UnixMilli(), b.ID)
}

// dueOf is when an open booking is due next: DueAt, or its deadline if it
// has none.
func dueOf(b booking.Booking) time.Time {
	if b.DueAt.IsZero() {
		return b.Deadline
	}
	return b.DueAt
}

// Claim takes up to limit open bookings due by now, split over the
// partitions of the leases (earliest first in each) as evenly as limit
// allows, the first leases taking the remainder (the caller rotates them),
// and makes them due again at now+hold, in one round trip per shard. A
// partition whose lease carries another token than the one given claims
// nothing (fleet.ErrLeaseLost, joined to what the others claimed).
func (s *Bookings) Claim(ctx context.Context, leases []fleet.Lease, now time.Time, hold time.Duration, limit int) ([]string, error) {
	cmds := make([]redisroute.Cmd, 0, len(leases))
	parts := make([]int, 0, len(leases))
	for i, l := range leases {
		if l.Partition < 0 || l.Partition >= s.ps.Count() {
			return nil, fmt.Errorf("claim: partition %d of %d", l.Partition, s.ps.Count())
		}
		quota := limit / len(leases)
		if i < limit%len(leases) {
			quota++
		}
		if quota == 0 {
			continue
		}
		cmds = append(cmds, s.claim.cmdKeys([]string{s.ps.OpenKey(l.Partition), s.ps.leaseKey(l.Partition)},
			now.UnixMilli(), now.Add(hold).UnixMilli(), quota, l.Token))
		parts = append(parts, l.Partition)
	}
	var ids []string
	var errs []error
	for i, res := range s.claim.exec(ctx, s.r, cmds) {
		switch {
		case errors.Is(res.Err, redis.Nil), res.Err == nil && res.Val == nil: // false: not the lease's holder
			errs = append(errs, fmt.Errorf("claim partition %d: %w", parts[i], fleet.ErrLeaseLost))
		case res.Err != nil:
			errs = append(errs, fmt.Errorf("claim partition %d: %w", parts[i], storeErr(res.Err)))
		default:
			vals, _ := res.Val.([]any)
			for _, v := range vals {
				if id, ok := v.(string); ok {
					ids = append(ids, id)
				}
			}
		}
	}
	return ids, errors.Join(errs...)
}

// Schedule makes an open booking due at `at`; one no longer indexed (it
// ended, and was forgotten) is not added back.
func (s *Bookings) Schedule(ctx context.Context, id string, at time.Time) error {
	return storeErr(s.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZADD", s.ps.openKeyOf(id), "XX", at.UnixMilli(), id)}).Err())
}

// Withdraw deletes b, as the create of b (the value given to Create) stored
// it, if nothing changed or kept it since. Its index entry stays: it may be
// a concurrent retry's too (one with the same ID, whose entry write left
// the score where this attempt's put it, ZADD GT, and whose record comes
// after this withdrawal), and an entry without a record is harmless: the
// scan that finds it due finds no booking and forgets it.
func (s *Bookings) Withdraw(ctx context.Context, b booking.Booking) error {
	b.Version = 1
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	res := s.withdraw.run(ctx, s.r, bookingKey(b.ID), string(raw))
	if res.Err != nil {
		return storeErr(res.Err)
	}
	if n, _ := res.Val.(int64); n != 1 {
		return nil // it moved on, or is another attempt's, or a retry kept it: it is real
	}
	// Best effort: a long poll on it learns it is gone.
	publish := redisroute.Write("SPUBLISH", s.ps.channel(s.ps.Of(b.ID)), b.ID)
	s.r.Exec(context.WithoutCancel(ctx), []redisroute.Cmd{publish})
	return nil
}

// Forget removes a booking from the open index if its entry is still due
// at `due` (see booking.Store.Forget).
func (s *Bookings) Forget(ctx context.Context, id string, due time.Time) error {
	return storeErr(s.forgetIf.run(ctx, s.r, s.ps.openKeyOf(id), id, due.UnixMilli()).Err)
}

func (s *Bookings) forget(id string) redisroute.Cmd {
	return redisroute.Write("ZREM", s.ps.openKeyOf(id), id)
}

func decodeBooking(v any) (booking.Booking, error) {
	var b booking.Booking
	raw, ok := v.(string)
	if !ok {
		return b, errors.New("booking record: not a string")
	}
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return b, fmt.Errorf("booking record: %w", err)
	}
	return b, nil
}

// legacyOpenKey is the open index before it was partitioned.
const legacyOpenKey = "apollo:bk:open"

// AdoptLegacyIndex moves the entries of the unpartitioned open index of
// earlier versions into the partitions (keeping an entry a partition has
// already), so the bookings open at an upgrade are worked again. Idempotent;
// a batch at a time; the moved count.
func (s *Bookings) AdoptLegacyIndex(ctx context.Context) (int, error) {
	moved := 0
	for {
		res := s.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"ZRANGE", legacyOpenKey, 0, 99, "WITHSCORES"}, Key: legacyOpenKey, Fresh: true}})[0]
		if res.Err != nil {
			return moved, storeErr(res.Err)
		}
		vals, _ := res.Val.([]any)
		if len(vals) == 0 {
			return moved, nil
		}
		var adds, rems []redisroute.Cmd
		for i := 0; i+1 < len(vals); i += 2 {
			id, _ := vals[i].(string)
			score, _ := vals[i+1].(string)
			adds = append(adds, redisroute.Write("ZADD", s.ps.openKeyOf(id), "NX", score, id))
			rems = append(rems, redisroute.Write("ZREM", legacyOpenKey, id))
		}
		if err := s.r.Exec(ctx, adds).Err(); err != nil {
			return moved, storeErr(err)
		}
		if err := s.r.Exec(ctx, rems).Err(); err != nil {
			return moved, storeErr(err)
		}
		moved += len(adds)
	}
}
