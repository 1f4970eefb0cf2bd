package spike

import (
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/sim"
)

// gridReachM is how far around the hotspot the map reaches.
const gridReachM = 2500

// cellsNear lists the cells of the given precision that intersect the
// square of half-side reach around center, walking out from center's cell.
func cellsNear(center driver.Location, reach float64, bits uint) []geocell.Cell {
	sw := sim.Offset(center, -reach, -reach)
	ne := sim.Offset(center, reach, reach)
	within := func(c geocell.Cell) bool {
		b := c.Bounds()
		return b.MaxLat >= sw.Lat && b.MinLat <= ne.Lat && b.MaxLng >= sw.Lng && b.MinLng <= ne.Lng
	}
	start, err := geocell.Of(center.Lat, center.Lng, bits)
	if err != nil {
		return nil
	}
	seen := map[geocell.Cell]bool{start: true}
	out, queue := []geocell.Cell{}, []geocell.Cell{start}
	for len(queue) > 0 && len(out) < 400 {
		c := queue[0]
		queue = queue[1:]
		out = append(out, c)
		for _, n := range c.Neighbors() {
			if !seen[n] && within(n) {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return out
}

// hotspotCells are the cells the storm's circle overlaps.
func hotspotCells(center driver.Location, radius float64, bits uint) []Box {
	var out []Box
	for _, c := range cellsNear(center, radius, bits) {
		b := c.Bounds()
		// The circle reaches the box if the box's nearest point is within radius.
		p := driver.Location{Lat: clamp(center.Lat, b.MinLat, b.MaxLat), Lng: clamp(center.Lng, b.MinLng, b.MaxLng)}
		if sim.DistanceM(center, p) <= radius {
			out = append(out, boxOf(c))
		}
	}
	return out
}

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }

func boxOf(c geocell.Cell) Box {
	b := c.Bounds()
	return Box{Cell: c.String(), MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng}
}
