package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
)

// lossyInstanceFault makes one Apollo instance's path to every Redis node
// lose packets (drill.LossyFraction of them, both ways), as the instance's
// own network card or host does when it fails: every node is slow now and
// then to that instance alone, while the cluster and the other instances
// see nothing wrong. No node is better than another to it, so hedges and
// ejections help it less than with one lossy node; what must hold is
// every guarantee, with its writes slower and some failing.
type lossyInstanceFault struct {
	c        *localcluster.Cluster
	in       *Instance
	restores []func(context.Context) error
}

func (f *lossyInstanceFault) Name() string {
	return fmt.Sprintf("instance losing %.3g %% of its packets to and from every Redis node (%s) %s", 100*drill.LossyFraction, f.in.RedisSource, f.in.Name)
}

func (f *lossyInstanceFault) Inject(ctx context.Context) error {
	if f.in.RedisSource == "" {
		return errors.New(f.in.Name + "'s build has no --redis-source-addr: its path alone cannot lose packets")
	}
	for _, n := range f.c.Nodes() {
		restore, err := f.c.Lossy(ctx, n, drill.LossyFraction, f.in.RedisSource)
		if err != nil {
			return errors.Join(err, f.Heal(context.WithoutCancel(ctx)))
		}
		f.restores = append(f.restores, restore)
	}
	return nil
}

// Heal restores every node's path; one that failed is kept, for a Heal
// again (Close of the cluster removes its rules regardless).
func (f *lossyInstanceFault) Heal(ctx context.Context) error {
	var errs []error
	var left []func(context.Context) error
	for _, restore := range f.restores {
		if err := restore(ctx); err != nil {
			errs = append(errs, err)
			left = append(left, restore)
		}
	}
	f.restores = left
	return errors.Join(errs...)
}
