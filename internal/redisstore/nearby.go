package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Nearby finds available drivers of a service within a radius, nearest
// first. It searches every geo cell the circle touches in one pipeline, then
// checks candidates against their own records (the index may lag by a
// heartbeat, or hold drivers who are busy or stale), nearest first, a page at
// a time, until it has Limit of them: most searches read a page of records,
// not every driver the index holds within the radius. A cell whose read fails
// is reported in FailedCells; the others still answer.
func (s *Drivers) Nearby(ctx context.Context, q NearbyQuery, now time.Time) (Nearby, error) {
	var out Nearby
	if err := driver.ValidateLocation(q.Lat, q.Lng); err != nil {
		return out, err
	}
	if err := driver.ValidateService(q.Service); err != nil {
		return out, err
	}
	if q.Limit < 1 || q.RadiusM <= 0 {
		return out, fmt.Errorf("%w: limit and radius must be positive", driver.ErrInvalidArgument)
	}
	cells, err := geocell.CellsWithin(q.Lat, q.Lng, q.RadiusM, s.cfg.GeoCellBits)
	if err != nil {
		return out, err
	}
	cmds := make([]redisroute.Cmd, len(cells))
	for i, c := range cells {
		cmds[i] = redisroute.Read("GEOSEARCH", geoKey(c.String()), "FROMLONLAT", q.Lng, q.Lat,
			"BYRADIUS", q.RadiusM, "m", "ASC", "COUNT", 4*q.Limit, "WITHDIST")
	}
	var found []indexed
	for i, res := range s.r.Exec(ctx, cmds) {
		if res.Err != nil {
			out.FailedCells = append(out.FailedCells, Failure{ID: cells[i].String(), Err: storeErr(res.Err)})
			continue
		}
		found = append(found, geoMembers(res.Val)...)
	}
	ids := nearestFirst(found)
	page := 2 * q.Limit
	for len(ids) > 0 && len(out.Drivers) < q.Limit {
		n := min(page, len(ids))
		batch, err := s.BatchGet(ctx, ids[:n])
		if err != nil {
			return out, err
		}
		ids = ids[n:]
		for _, d := range batch.Drivers {
			dist := geocell.DistanceM(q.Lat, q.Lng, d.Location.Lat, d.Location.Lng)
			if dist <= q.RadiusM && s.rules.Available(d, now, q.Service) {
				out.Drivers = append(out.Drivers, NearbyDriver{Driver: d, DistanceM: dist})
			}
		}
	}
	slices.SortFunc(out.Drivers, func(a, b NearbyDriver) int { return cmp.Compare(a.DistanceM, b.DistanceM) })
	if len(out.Drivers) > q.Limit {
		out.Drivers = out.Drivers[:q.Limit]
	}
	return out, nil
}

// indexed is a driver as the geo index places it.
type indexed struct {
	id    string
	distM float64
}

// nearestFirst orders the ids of the indexed drivers by their distance in
// the index, each once (a driver who just crossed a cell edge can be in two
// cells until the heartbeat's cleanup lands).
func nearestFirst(found []indexed) []string {
	slices.SortStableFunc(found, func(a, b indexed) int { return cmp.Compare(a.distM, b.distM) })
	seen := make(map[string]bool, len(found))
	ids := make([]string, 0, len(found))
	for _, f := range found {
		if !seen[f.id] {
			seen[f.id] = true
			ids = append(ids, f.id)
		}
	}
	return ids
}

// geoMembers reads the members and distances of a GEOSEARCH ... WITHDIST
// reply.
func geoMembers(v any) []indexed {
	items, _ := v.([]any)
	out := make([]indexed, 0, len(items))
	for _, it := range items {
		pair, _ := it.([]any)
		if len(pair) < 2 {
			continue
		}
		id, ok := pair[0].(string)
		if !ok {
			continue
		}
		out = append(out, indexed{id: id, distM: distance(pair[1])})
	}
	return out
}

// distance reads a GEOSEARCH distance: a string in RESP2, a double in RESP3.
// One that cannot be read sorts last; the driver is still checked.
func distance(v any) float64 {
	switch d := v.(type) {
	case float64:
		return d
	case string:
		if f, err := strconv.ParseFloat(d, 64); err == nil {
			return f
		}
	}
	return math.Inf(1)
}
