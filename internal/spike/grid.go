package spike

import (
	"math"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/sim"
)

// gridReachM is how far around the hotspot the map reaches.
const gridReachM = 2500

// cellsNear lists the cells of the given precision that intersect the
// square of half-side reach around center: those within the square's
// circumscribed circle, less the ones outside the square.
func cellsNear(center driver.Location, reach float64, bits uint) []geocell.Cell {
	cells, err := geocell.CellsWithin(center.Lat, center.Lng, reach*math.Sqrt2, bits)
	if err != nil {
		return nil
	}
	sw, ne := sim.Offset(center, -reach, -reach), sim.Offset(center, reach, reach)
	out := cells[:0]
	for _, c := range cells {
		if b := c.Bounds(); b.MaxLat >= sw.Lat && b.MinLat <= ne.Lat && b.MaxLng >= sw.Lng && b.MinLng <= ne.Lng {
			out = append(out, c)
		}
	}
	return out
}

// hotspotCells are the cells the storm's circle overlaps.
func hotspotCells(center driver.Location, radius float64, bits uint) []Box {
	cells, err := geocell.CellsWithin(center.Lat, center.Lng, radius, bits)
	if err != nil {
		return nil
	}
	out := make([]Box, len(cells))
	for i, c := range cells {
		out[i] = boxOf(c)
	}
	return out
}

func boxOf(c geocell.Cell) Box {
	b := c.Bounds()
	return Box{Cell: c.String(), MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng}
}
