package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Nearby finds available drivers of a service within a radius, nearest
// first. It searches every geo cell the circle touches in one pipeline, and
// with each cell's search reads the members its liveness set says are
// stale (same slot, same round trip), which it skips unread. It then checks
// the other candidates against their own records (the index may lag by a
// heartbeat, or hold drivers who are busy or stale), nearest first, a page
// at a time, until it has Limit of them: most searches read a page of
// records, not every driver the index holds within the radius. A cell whose
// read fails is reported in FailedCells, a driver whose record's read fails
// in FailedDrivers; the others still answer.
//
// The stale members it skipped and those whose record it found missing or
// stale are swept out of the index once the answer is built, in one
// best-effort write per cell waited for at most SweepWait: heartbeats sweep
// cells where drivers are still alive, this sweeps cells where none are.
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
	cutoff := s.staleCutoff(now)
	cmds := make([]redisroute.Cmd, 0, 2*len(cells))
	for _, c := range cells {
		cmds = append(cmds,
			redisroute.Read("GEOSEARCH", geoKey(c.String()), "FROMLONLAT", q.Lng, q.Lat,
				"BYRADIUS", q.RadiusM, "m", "ASC", "COUNT", 4*q.Limit, "WITHDIST"),
			redisroute.Read("ZRANGEBYSCORE", livenessKey(c.String()), "-inf", "("+strconv.FormatInt(cutoff, 10),
				"LIMIT", 0, 4*q.Limit))
	}
	res := s.r.Exec(ctx, cmds)
	var found []indexed
	sw := sweeps{}
	for i, c := range cells {
		cell, geo, live := c.String(), res[2*i], res[2*i+1]
		if geo.Err != nil {
			out.FailedCells = append(out.FailedCells, Failure{ID: cell, Err: storeErr(geo.Err)})
			continue
		}
		stale := map[string]bool{}
		if live.Err == nil { // without it, the records decide
			for _, id := range stringsOf(live.Val) {
				stale[id] = true
			}
		}
		for _, m := range geoMembers(geo.Val) {
			if stale[m.id] {
				sw.add([]string{cell}, m.id)
				continue
			}
			m.cell = cell
			found = append(found, m)
		}
	}
	ids, where := nearestFirst(found)
	page := 2 * q.Limit
	for len(ids) > 0 && len(out.Drivers) < q.Limit {
		n := min(page, len(ids))
		batch, err := s.BatchGet(ctx, ids[:n])
		if err != nil {
			return out, err
		}
		ids = ids[n:]
		out.FailedDrivers = append(out.FailedDrivers, batch.Failed...)
		for _, id := range batch.Missing {
			sw.add(where[id], id)
		}
		for _, d := range batch.Drivers {
			if s.rules.Stale(d, now) {
				sw.add(where[d.ID], d.ID)
				continue
			}
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
	s.sweepCells(ctx, sw, cutoff)
	return out, nil
}

// sweeps are the members a search found dead, by cell, at most sweepLimit
// per cell.
type sweeps map[string][]string

func (sw sweeps) add(cells []string, id string) {
	for _, cell := range cells {
		if len(sw[cell]) < sweepLimit && !slices.Contains(sw[cell], id) {
			sw[cell] = append(sw[cell], id)
		}
	}
}

// sweepCells takes the dead members a search found out of their cells: one
// write per cell, in one pipeline, waited for at most SweepWait. Best
// effort: the result is ignored, since a member left behind is swept by the
// cell's next heartbeat or search. The sweep script spares a driver who
// heartbeated after the cutoff, so a driver that came back since its record
// was read stays.
func (s *Drivers) sweepCells(ctx context.Context, sw sweeps, cutoff int64) {
	if len(sw) == 0 || s.cfg.SweepWait == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SweepWait)
	defer cancel()
	cmds := make([]redisroute.Cmd, 0, len(sw))
	for _, cell := range slices.Sorted(maps.Keys(sw)) {
		args := []any{cutoff}
		for _, id := range sw[cell] {
			args = append(args, id)
		}
		cmds = append(cmds, cellCmd(s.sweep, cell, args...))
	}
	s.sweep.exec(ctx, s.r, cmds)
}

// indexed is a driver as the geo index places it.
type indexed struct {
	id    string
	cell  string
	distM float64
}

// nearestFirst orders the ids of the indexed drivers by their distance in
// the index, each once (a driver who just crossed a cell edge can be in two
// cells until the heartbeat's cleanup lands), and says which cells each was
// found in.
func nearestFirst(found []indexed) ([]string, map[string][]string) {
	slices.SortStableFunc(found, func(a, b indexed) int { return cmp.Compare(a.distM, b.distM) })
	where := make(map[string][]string, len(found))
	ids := make([]string, 0, len(found))
	for _, f := range found {
		if _, seen := where[f.id]; !seen {
			ids = append(ids, f.id)
		}
		where[f.id] = append(where[f.id], f.cell)
	}
	return ids, where
}

// stringsOf reads a reply that is a list of strings (ZRANGEBYSCORE).
func stringsOf(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
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
