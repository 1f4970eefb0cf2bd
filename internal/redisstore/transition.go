package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Apply runs a driver event: read the driver from its primary, apply the
// pure domain transition, and write it back with a compare-and-set on the
// version in one Lua script. If the driver changed in between, it starts
// over (up to CASAttempts), so concurrent events serialise and a driver is
// never reserved by two bookings. An empty tr.BookingID means the driver's
// current booking. go_online creates a driver never seen before.
func (s *Drivers) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	for attempt := 0; attempt < s.cfg.CASAttempts; attempt++ {
		d, cell, err := s.get(ctx, id, read{fresh: true})
		if errors.Is(err, ErrNotFound) && tr.Event == driver.EventGoOnline {
			d, err = driver.Driver{ID: id, Status: driver.StatusOffline}, nil
		}
		if err != nil {
			return driver.Driver{}, err
		}
		if tr.BookingID == "" {
			tr.BookingID = d.BookingID
		}
		next, err := driver.Apply(d, tr, now)
		if err != nil {
			err = s.confirmRefusal(ctx, d, tr, err)
			if errors.Is(err, errRefusedOnStale) {
				continue // the state moved on: decide again on the new one
			}
			return d, err
		}
		if tr.Event == driver.EventReserve {
			// Indexed before it is made, so that no reservation exists that
			// the sweep cannot find; an entry for a reservation that failed
			// is dropped by the sweep.
			if err := s.indexReservation(ctx, next); err != nil {
				return driver.Driver{}, err
			}
		}
		ok, err := s.compareAndSet(ctx, d, next)
		if err != nil {
			return driver.Driver{}, err
		}
		if ok {
			s.afterTransition(ctx, d, next, cell)
			return next, nil
		}
	}
	return driver.Driver{}, fmt.Errorf("driver %s: %w", id, ErrConflict)
}

// confirmRefusal returns the domain's refusal of an event only if the
// state it refused on is confirmed (see redisroute.Cmd.Acks): read without
// confirmation, it may be a transition a failover is about to undo, or the
// state on a primary already replaced, and "illegal" would then be a
// wrong answer, not an unknown one. A refusal of the input itself needs no
// confirmation, nor a refused reservation (refusing to reserve is always
// safe, and the allocation moves on to the next driver); a state that
// changed meanwhile is errRefusedOnStale, to decide again.
func (s *Drivers) confirmRefusal(ctx context.Context, d driver.Driver, tr driver.Transition, refusal error) error {
	if s.cfg.Acks == 0 || tr.Event == driver.EventReserve ||
		errors.Is(refusal, driver.ErrInvalidArgument) || errors.Is(refusal, driver.ErrInvalidServices) {
		return refusal
	}
	c, _, err := s.get(ctx, d.ID, read{fresh: true, confirmed: true})
	if errors.Is(err, ErrNotFound) && d.Version == 0 {
		return refusal
	}
	if err != nil {
		return err
	}
	if c.Version != d.Version {
		return errRefusedOnStale
	}
	return refusal
}

// errRefusedOnStale: a refusal was decided on a state a confirmed read
// shows has moved on.
var errRefusedOnStale = errors.New("refused on a state that has moved on")

func (s *Drivers) compareAndSet(ctx context.Context, old, next driver.Driver) (bool, error) {
	cmd := s.cas.cmd(driverKey(old.ID), append([]any{old.Version, s.cfg.DriverTTL.Milliseconds()}, stateFields(next)...)...)
	cmd.Acks = s.cfg.Acks
	res := s.cas.exec(ctx, s.r, []redisroute.Cmd{cmd})[0]
	if res.Err != nil {
		// An unconfirmed or ambiguous transition may have been applied (or
		// be undone by a failover): it is not reported as done.
		return false, storeErr(res.Err)
	}
	reply, ok := res.Val.([]any)
	if !ok || len(reply) != 2 {
		return false, fmt.Errorf("cas script: unexpected reply %v", res.Val)
	}
	applied, _ := reply[0].(int64)
	return applied == 1, nil
}

// afterTransition keeps the geo index to available drivers: a driver who
// became available joins its cell's set, one who stopped being available
// leaves it. Best effort: the next heartbeat puts a lost write right, and a
// nearby search checks every driver's own record anyway.
func (s *Drivers) afterTransition(ctx context.Context, old, next driver.Driver, cell string) {
	was, is := old.Status == driver.StatusAvailable, next.Status == driver.StatusAvailable
	if was == is || cell == "" {
		return
	}
	s.r.Exec(ctx, []redisroute.Cmd{indexCmd(next.ID, cell, next.Location, is)})
}
