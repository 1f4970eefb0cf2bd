package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// The reserved-drivers index, so that a reservation no booking holds can
// be found and freed (booking's sweep):
//
//	apollo:drv:reserved   zset   drivers reserved (or once reserved), scored by
//	                             when the sweep should look at them (ms)
const reservedKey = "apollo:drv:reserved"

// lapsedGrace is how long after a reservation's end the sweep leaves it to
// the booking's own expiry, which normally comes first.
const lapsedGrace = time.Second

func (s *Drivers) indexReservation(ctx context.Context, d driver.Driver) error {
	at := d.ReservedUntil.Add(lapsedGrace).UnixMilli()
	return storeErr(s.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("ZADD", reservedKey, at, d.ID)}).Err())
}

// ClaimLapsed returns up to limit drivers still reserved past their
// reservation's end (plus a grace), and makes each due again at now+hold
// in the index. Entries of drivers no longer reserved are dropped; those of
// drivers reserved again since are moved to the new reservation's end.
// Records are read from primaries: a replica's stale "not reserved" would
// drop the entry of a reservation that still exists.
func (s *Drivers) ClaimLapsed(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]driver.Driver, error) {
	heldUntil := now.Add(hold).UnixMilli()
	res := s.claim.run(ctx, s.r, reservedKey, now.UnixMilli(), heldUntil, limit)
	if res.Err != nil {
		return nil, storeErr(res.Err)
	}
	vals, _ := res.Val.([]any)
	ids := make([]string, 0, len(vals))
	reads := make([]redisroute.Cmd, 0, len(vals))
	for _, v := range vals {
		if id, ok := v.(string); ok {
			ids = append(ids, id)
			reads = append(reads, readDriver(id, true))
		}
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
			drop = append(drop, s.zremIf.cmd(reservedKey, ids[i], heldUntil))
		case now.Before(d.ReservedUntil.Add(lapsedGrace)):
			move = append(move, redisroute.Write("ZADD", reservedKey, "XX", d.ReservedUntil.Add(lapsedGrace).UnixMilli(), ids[i]))
		default:
			lapsed = append(lapsed, d)
		}
	}
	// Best effort: an entry not tidied now is claimed again after the hold.
	s.zremIf.exec(ctx, s.r, drop)
	s.r.Exec(ctx, move)
	return lapsed, nil
}

// ReservedIndex lists the reserved-drivers index with its scores, for tests
// and tools.
func (s *Drivers) ReservedIndex(ctx context.Context) (map[string]time.Time, error) {
	res := s.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"ZRANGE", reservedKey, 0, -1, "WITHSCORES"}, Key: reservedKey, Fresh: true}})[0]
	if res.Err != nil {
		return nil, storeErr(res.Err)
	}
	vals, _ := res.Val.([]any)
	out := map[string]time.Time{}
	for i := 0; i+1 < len(vals); i += 2 {
		id, _ := vals[i].(string)
		ms, _ := strconv.ParseFloat(fmt.Sprint(vals[i+1]), 64)
		out[id] = time.UnixMilli(int64(ms))
	}
	return out, nil
}
