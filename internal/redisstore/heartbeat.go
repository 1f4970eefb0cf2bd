package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Heartbeat records a driver's location at now and keeps the geo index in
// step. The index holds available drivers only, so that a nearby search does
// not wade through busy ones: an available driver is added to its cell's set
// and, when it crossed into a new cell, removed from the old one; any other
// driver is removed. Every driver's heartbeat also raises its liveness in
// the cell (keys.go) and sweeps a few members silent for longer than
// StaleAfter out of the cell, so dead drivers do not crowd a search's
// nearest candidates. The hash and the index live on different slots, so
// the index is updated after the hash; a lost index write, or one that
// raced a reservation, is put right by the next heartbeat (and a search
// checks every driver's own record anyway).
//
// Each heartbeat also pushes the hash's expiry DriverTTL out. Reserved and
// on-trip drivers heartbeat like any other, so only a driver silent for the
// whole TTL loses its hash; a reservation it held goes with it (the booking
// still names the driver, and Release finds none to release), and its next
// heartbeat, if any, brings it back offline.
func (s *Drivers) Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error) {
	if err := driver.ValidateID(id); err != nil {
		return driver.Driver{}, err
	}
	if err := driver.ValidateLocation(loc.Lat, loc.Lng); err != nil {
		return driver.Driver{}, err
	}
	c, err := geocell.Of(loc.Lat, loc.Lng, s.cfg.GeoCellBits)
	if err != nil {
		return driver.Driver{}, err
	}
	cell := c.String()
	lat, lng := strconv.FormatFloat(loc.Lat, 'f', -1, 64), strconv.FormatFloat(loc.Lng, 'f', -1, 64)
	hb := now.UnixMilli()
	res := s.heartbeat.run(ctx, s.r, driverKey(id), id, lat, lng, hb, cell, s.cfg.DriverTTL.Milliseconds())
	if res.Err != nil {
		return driver.Driver{}, storeErr(res.Err)
	}
	reply, ok := res.Val.([]any)
	if !ok || len(reply) != 3 {
		return driver.Driver{}, fmt.Errorf("heartbeat script: unexpected reply %v", res.Val)
	}
	applied, _ := reply[0].(int64)
	oldCell, _ := reply[1].(string)
	status, _ := reply[2].(string)
	if applied == 1 {
		available := "0"
		if driver.Status(status) == driver.StatusAvailable {
			available = "1"
		}
		put := cellCmd(s.index, cell, id, loc.Lng, loc.Lat, hb, available, s.staleCutoff(now), sweepLimit)
		if err := s.index.exec(ctx, s.r, []redisroute.Cmd{put})[0].Err; err != nil {
			return driver.Driver{}, storeErr(err)
		}
		// Leaving a cell: out of both its sets, unless the cell heard from
		// the driver after this heartbeat (index writes can land out of order).
		if oldCell != "" && oldCell != cell {
			if err := s.sweep.exec(ctx, s.r, []redisroute.Cmd{cellCmd(s.sweep, oldCell, hb+1, id)})[0].Err; err != nil {
				return driver.Driver{}, storeErr(err)
			}
		}
	}
	d, _, err := s.get(ctx, id, read{fresh: true})
	return d, err
}

// sweepLimit bounds the members one index write or one search sweeps out of
// a cell, so that no write does much work however many drivers died at once.
// Every heartbeat in the cell sweeps, so the backlog still clears fast.
const sweepLimit = 32

// staleCutoff is the liveness (unix ms) below which a driver is stale at now.
func (s *Drivers) staleCutoff(now time.Time) int64 {
	return now.Add(-s.rules.StaleAfter).UnixMilli()
}

// cellCmd runs sc (indexScript or sweepScript) on a cell's geo and liveness
// sets, which share the cell's tag and so its slot.
func cellCmd(sc script, cell string, args ...any) redisroute.Cmd {
	geo := geoKey(cell)
	return redisroute.Cmd{Args: append([]any{"EVALSHA", sc.sha, 2, geo, livenessKey(cell)}, args...), Key: geo, Write: true}
}

// indexCmd is a transition's write to the geo index: it puts a driver in
// its cell's geo set if it is available, and takes it out if not. It leaves
// the cell's liveness to heartbeats, which alone know when the driver was
// last heard from: a reserved driver keeps heartbeating and keeps its
// liveness, so a decline puts it back live. A driver put back after its
// liveness was swept has none until its next heartbeat; a search checks its
// record and sweeps it if that is stale.
func indexCmd(id, cell string, loc driver.Location, available bool) redisroute.Cmd {
	if available {
		return redisroute.Write("GEOADD", geoKey(cell), loc.Lng, loc.Lat, id)
	}
	return redisroute.Write("ZREM", geoKey(cell), id)
}
