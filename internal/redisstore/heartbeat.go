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
// driver is removed. The hash and the index live on different slots, so the
// index is updated after the hash; a lost index write, or one that raced a
// reservation, is put right by the next heartbeat (and a search checks every
// driver's own record anyway).
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
	res := s.heartbeat.run(ctx, s.r, driverKey(id), id, lat, lng, now.UnixMilli(), cell)
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
		index := []redisroute.Cmd{indexCmd(id, cell, loc, driver.Status(status) == driver.StatusAvailable)}
		if oldCell != "" && oldCell != cell {
			index = append(index, redisroute.Write("ZREM", geoKey(oldCell), id))
		}
		if err := s.r.Exec(ctx, index).Err(); err != nil {
			return driver.Driver{}, storeErr(err)
		}
	}
	d, _, err := s.get(ctx, id, true)
	return d, err
}

// indexCmd puts a driver in its cell's geo set if it is available, and takes
// it out if not.
func indexCmd(id, cell string, loc driver.Location, available bool) redisroute.Cmd {
	if available {
		return redisroute.Write("GEOADD", geoKey(cell), loc.Lng, loc.Lat, id)
	}
	return redisroute.Write("ZREM", geoKey(cell), id)
}
