package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// SlotCount returns how many slots the node serves in this view. Open
// migrations ("[slot->-id]", "[slot-<-id]") are not counted: the slot is
// still served by the node whose range lists it.
func (v NodeView) SlotCount() int {
	n := 0
	for _, r := range v.SlotRanges() {
		n += r[1] - r[0] + 1
	}
	return n
}

// SlotRanges returns the slot ranges [first, last] the node serves in
// this view, open migrations left out (see SlotCount).
func (v NodeView) SlotRanges() [][2]int {
	var out [][2]int
	for _, s := range v.Slots {
		if strings.HasPrefix(s, "[") {
			continue
		}
		lo, hi, ok := strings.Cut(s, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && b >= a {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// SlotCounts returns how many slots each node that is a primary serves, as
// the first running node that answers sees it. Resharding changes it:
// shards are groups of nodes, not fixed slot ranges.
func (c *Cluster) SlotCounts(ctx context.Context) (map[*Node]int, error) {
	var lastErr error = ErrClosed
	for _, n := range c.nodes {
		if n.State() != Running {
			continue
		}
		view, err := c.view(ctx, n)
		if err != nil {
			lastErr = err
			continue
		}
		out := map[*Node]int{}
		for _, v := range view {
			if !v.IsPrimary() {
				continue
			}
			for _, node := range c.nodes {
				if node.ID() == v.ID {
					out[node] = v.SlotCount()
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no node answered CLUSTER NODES: %w", lastErr)
}
