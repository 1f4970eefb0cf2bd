package redisstore

import (
	"context"
	"fmt"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

func readDriver(id string, fresh bool) redisroute.Cmd {
	c := redisroute.Read("HMGET", driverKey(id), driverFields...)
	c.Fresh = fresh
	return c
}

// Get reads one driver (from a replica, per the router's read policy).
func (s *Drivers) Get(ctx context.Context, id string) (driver.Driver, error) {
	d, _, err := s.get(ctx, id, read{})
	return d, err
}

// read is how get reads a driver: from any node (the read policy), from
// its primary, or from its primary confirmed by Acks replicas.
type read struct{ fresh, confirmed bool }

func (s *Drivers) get(ctx context.Context, id string, how read) (driver.Driver, string, error) {
	if err := driver.ValidateID(id); err != nil {
		return driver.Driver{}, "", err
	}
	cmd := readDriver(id, how.fresh)
	if how.confirmed {
		cmd.Acks = s.cfg.Acks
	}
	res := s.r.Exec(ctx, []redisroute.Cmd{cmd})[0]
	if res.Err != nil {
		return driver.Driver{}, "", storeErr(res.Err)
	}
	d, cell, found, err := decodeDriver(res.Val)
	if err != nil {
		return d, "", err
	}
	if !found && !how.fresh {
		return s.get(ctx, id, read{fresh: true}) // see confirmMissing
	}
	if !found {
		return d, "", fmt.Errorf("driver %s: %w", id, ErrNotFound)
	}
	return d, cell, nil
}

// BatchGet is the call of the 2019 incident: one pipeline of HMGET, one per
// driver, through the router's read policy. Each driver has its own
// outcome, so a failed node costs only the drivers it could not serve.
// Duplicate ids are read once.
func (s *Drivers) BatchGet(ctx context.Context, ids []string) (Batch, error) {
	for _, id := range ids {
		if err := driver.ValidateID(id); err != nil {
			return Batch{}, err
		}
	}
	uniq := driver.Distinct(ids)
	// Usually every driver is found: room for all, so that appending
	// never copies a slice of them.
	b := Batch{Drivers: make([]driver.Driver, 0, len(uniq))}
	cmds := make([]redisroute.Cmd, len(uniq))
	for i, id := range uniq {
		cmds[i] = readDriver(id, false)
	}
	results := s.confirmMissing(ctx, uniq, s.r.Exec(ctx, cmds))
	for i, res := range results {
		id := uniq[i]
		if res.Err != nil {
			b.Failed = append(b.Failed, Failure{ID: id, Err: storeErr(res.Err)})
			continue
		}
		d, _, found, err := decodeDriver(res.Val)
		switch {
		case err != nil:
			b.Failed = append(b.Failed, Failure{ID: id, Err: err})
		case !found:
			b.Missing = append(b.Missing, id)
		default:
			b.Drivers = append(b.Drivers, d)
		}
	}
	return b, nil
}

// confirmMissing re-reads from the primaries the drivers a replica reported
// missing. A replica cannot tell a key that moved to another shard during
// a reshard from one that never existed (it does not know the slot is
// migrating); its primary answers ASK or MOVED instead, which the router
// follows. Missing drivers are rare, so this costs little.
func (s *Drivers) confirmMissing(ctx context.Context, ids []string, res redisroute.Results) redisroute.Results {
	var again []int
	for i, r := range res {
		if r.Err == nil && isMissing(r.Val) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	cmds := make([]redisroute.Cmd, len(again))
	for k, i := range again {
		cmds[k] = readDriver(ids[i], true)
	}
	for k, r := range s.r.Exec(ctx, cmds) {
		if r.Err == nil {
			res[again[k]] = r
		}
	}
	return res
}

// isMissing reports an HMGET reply with no id: no such driver.
func isMissing(v any) bool {
	vals, ok := v.([]any)
	return ok && len(vals) > 0 && vals[0] == nil
}

// GetFresh reads one driver from its primary, confirmed by as many
// replicas as a transition (see redisroute.Cmd.Acks): for decisions that
// must see the latest transition, and must not rest on one that a
// failover undoes, nor on a primary already replaced.
func (s *Drivers) GetFresh(ctx context.Context, id string) (driver.Driver, error) {
	d, _, err := s.get(ctx, id, read{fresh: true, confirmed: true})
	return d, err
}
