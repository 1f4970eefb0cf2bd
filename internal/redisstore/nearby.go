package redisstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Nearby finds available drivers of a service within a radius, nearest
// first. It searches every geo cell the circle touches in one pipeline, then
// checks each candidate against its own record (the index may lag by a
// heartbeat, or hold drivers who are busy or stale). A cell whose read fails
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
	seen := map[string]bool{}
	var ids []string
	for i, res := range s.r.Exec(ctx, cmds) {
		if res.Err != nil {
			out.FailedCells = append(out.FailedCells, Failure{ID: cells[i].String(), Err: storeErr(res.Err)})
			continue
		}
		for _, id := range geoMembers(res.Val) {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	batch, err := s.BatchGet(ctx, ids)
	if err != nil {
		return out, err
	}
	for _, d := range batch.Drivers {
		dist := geocell.DistanceM(q.Lat, q.Lng, d.Location.Lat, d.Location.Lng)
		if dist <= q.RadiusM && s.rules.Available(d, now, q.Service) {
			out.Drivers = append(out.Drivers, NearbyDriver{Driver: d, DistanceM: dist})
		}
	}
	slices.SortFunc(out.Drivers, func(a, b NearbyDriver) int {
		switch {
		case a.DistanceM < b.DistanceM:
			return -1
		case a.DistanceM > b.DistanceM:
			return 1
		}
		return 0
	})
	if len(out.Drivers) > q.Limit {
		out.Drivers = out.Drivers[:q.Limit]
	}
	return out, nil
}

// geoMembers reads the member names of a GEOSEARCH ... WITHDIST reply.
func geoMembers(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		pair, _ := it.([]any)
		if len(pair) == 0 {
			continue
		}
		if id, ok := pair[0].(string); ok {
			out = append(out, id)
		}
	}
	return out
}
