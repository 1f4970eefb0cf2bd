package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// restartFault kills every node at once (SIGKILL, as a power cut of a
// whole cluster would, but with the kernel's page cache kept) and restarts
// each from its own directory: nodes.conf brings the cluster back with the
// same roles and slots, and the data is whatever the persistence setting
// kept. Its effect is how many of the keys there at the kill are there
// after the restart (Apollo may delete a few meanwhile, never many).
//
// With node set, only that node (a primary) is killed, and it is
// restarted at once, as a supervisor restarts a crashed process: back
// within the cluster's node timeout, it is still its shard's primary, and
// its replicas copy whatever it came back with (a new replication history,
// so a full sync). Persisted, that is everything it answered for;
// without persistence, an empty data set: the whole shard lost.
type restartFault struct {
	c         *localcluster.Cluster
	node      *localcluster.Node // nil: every node
	before    []string
	beforeErr error
	effect    string
}

func (r *restartFault) Name() string {
	if r.node != nil {
		return "primary killed (SIGKILL) and restarted at once, before a failover " + r.node.Addr
	}
	return "every node killed and restarted from its data directory"
}

func (r *restartFault) Inject(ctx context.Context) error {
	r.before, r.beforeErr = r.keys(ctx)
	if r.node != nil {
		return r.node.Restart(ctx)
	}
	var errs []error
	for _, nd := range r.c.Nodes() {
		errs = append(errs, nd.Kill())
	}
	return errors.Join(errs...)
}

func (r *restartFault) Heal(ctx context.Context) error {
	if r.node == nil {
		nodes := r.c.Nodes()
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, nd := range nodes {
			wg.Go(func() { errs[i] = nd.Restart(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if err := r.c.WaitHealthy(ctx); err != nil {
		return err
	}
	after, err := r.keys(ctx)
	switch {
	case r.beforeErr != nil || err != nil:
		r.effect = fmt.Sprintf("the keys kept are not known: %v", errors.Join(r.beforeErr, err))
	default:
		r.effect = fmt.Sprintf("%d of the %d keys there at the kill were there after the restart (persistence %s)",
			kept(r.before, after), len(r.before), r.c.Config().Persistence)
	}
	if r.node != nil && !r.isPrimary(ctx) {
		// The restart took longer than the node timeout: a replica was
		// promoted, and this was a failover after all.
		r.effect += "; it came back as a replica: a failover happened meanwhile"
	}
	return nil
}

// isPrimary reports whether the restarted node says it is a primary (the
// cluster is healthy again: its role is settled).
func (r *restartFault) isPrimary(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return r.c.WaitRole(ctx, r.node, "primary") == nil
}

func (r *restartFault) Effect() string { return r.effect }

func kept(before, after []string) int {
	have := make(map[string]bool, len(after))
	for _, k := range after {
		have[k] = true
	}
	n := 0
	for _, k := range before {
		if have[k] {
			n++
		}
	}
	return n
}

// keys lists the keys on every shard's primary (a verify run has a few
// hundred), or on the restarted node's shard: the node itself, which holds
// its shard's data whether or not it is still the primary once healed.
func (r *restartFault) keys(ctx context.Context) ([]string, error) {
	nodes := []*localcluster.Node{r.node}
	if r.node == nil {
		nodes = nodes[:0]
		for s := range r.c.Config().Primaries {
			p := r.c.Primary(ctx, s)
			if p == nil {
				return nil, fmt.Errorf("shard %d has no primary", s)
			}
			nodes = append(nodes, p)
		}
	}
	var all []string
	for _, nd := range nodes {
		cl := nd.Client()
		ks, err := cl.Keys(ctx, "*").Result()
		cl.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, ks...)
	}
	return all, nil
}
