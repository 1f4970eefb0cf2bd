package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// restartFault kills every node at once (SIGKILL, as a power cut of a
// whole cluster would, but with the kernel's page cache kept) and restarts
// each from its own directory: nodes.conf brings the cluster back with the
// same roles and slots, and the data is whatever the persistence setting
// kept. Its effect is the keys kept of those there were.
type restartFault struct {
	c      *localcluster.Cluster
	before int64
	effect string
}

func (r *restartFault) Name() string {
	return "every node killed and restarted from its data directory"
}

func (r *restartFault) Inject(ctx context.Context) error {
	r.before, _ = r.keys(ctx)
	var errs []error
	for _, nd := range r.c.Nodes() {
		errs = append(errs, nd.Kill())
	}
	return errors.Join(errs...)
}

func (r *restartFault) Heal(ctx context.Context) error {
	nodes := r.c.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nd.Restart(ctx) }()
	}
	wg.Wait()
	if err := errors.Join(append(errs, r.c.WaitHealthy(ctx))...); err != nil {
		return err
	}
	after, err := r.keys(ctx)
	if err == nil {
		r.effect = fmt.Sprintf("%d of %d keys kept (%s)", after, r.before, "persistence "+r.c.Config().Persistence.String())
	}
	return nil
}

func (r *restartFault) Effect() string { return r.effect }

// keys counts the keys on every shard's primary.
func (r *restartFault) keys(ctx context.Context) (int64, error) {
	var total int64
	for s := range r.c.Config().Primaries {
		p := r.c.Primary(ctx, s)
		if p == nil {
			return 0, fmt.Errorf("shard %d has no primary", s)
		}
		cl := p.Client()
		n, err := cl.DBSize(ctx).Result()
		cl.Close()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
