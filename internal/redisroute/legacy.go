package redisroute

import (
	"fmt"
	"sync"
)

// execLegacy is the 2019 client and wrapper, reproduced for drills: each
// command goes to a random replica of its slot from a topology refreshed
// every 60 s, nothing is hedged or retried, and if any command fails the
// wrapper reports the whole pipeline as failed.
func (r *Router) execLegacy(c *call) {
	t := r.topo.Load()
	byNode := map[*node][]int{}
	var order []*node
	for i, cmd := range c.cmds {
		if c.st[i].done {
			continue
		}
		s := t.slots[Slot(cmd.Key)]
		if s == nil {
			c.finish(i, Result{Err: ErrNoNode})
			continue
		}
		n := s.primary
		if !cmd.Write {
			n = pickLegacy(s)
		}
		if _, ok := byNode[n]; !ok {
			order = append(order, n)
		}
		byNode[n] = append(byNode[n], i)
	}
	attempts := make([]*attempt, len(order))
	var wg sync.WaitGroup
	for k, n := range order {
		a := &attempt{node: n, idx: byNode[n], via: ViaPreferred}
		attempts[k] = a
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.send(c.ctx, a, c.cmds)
		}()
	}
	wg.Wait()
	var firstErr error
	for _, a := range attempts {
		for k, i := range a.idx {
			err := a.replies[k].Err()
			if classify(err) != classOK {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", a.node.addr, err)
				}
				c.finish(i, Result{Err: fmt.Errorf("%s: %w", a.node.addr, err), Node: a.node.addr, Via: ViaPreferred})
				continue
			}
			c.finish(i, Result{Val: value(a.replies[k]), Node: a.node.addr, Via: ViaPreferred})
		}
	}
	if firstErr != nil {
		for i := range c.res {
			c.res[i].Err = fmt.Errorf("%w: %w", ErrLegacyPipelineFailed, firstErr)
			c.res[i].Val = nil
		}
	}
}
