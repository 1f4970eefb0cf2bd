package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
)

// switchover promotes a replica with CLUSTER FAILOVER while its primary is
// up, as an upgrade or a rebalancing does. Coordinated (force false), the
// primary stops taking writes, the replica catches up and takes over, and
// the commands held meanwhile are answered MOVED: nothing acknowledged is
// lost. Forced, the replica takes over at once without its primary's
// agreement, with whatever it has received, and the old primary and its
// other replicas then copy it: a write the forced replica had not received
// is dropped, even one another replica acknowledged (WAIT counts replicas,
// it cannot choose them), and so is one the old primary took, and its
// other replica acknowledged, in the moment before it learnt. Apollo's
// write proof (redisroute/proof.go) keeps such writes from being reported
// done; before it, with fewer --booking-acks than the shard has replicas,
// a booking answered 201 was lost (README, G3), and verify reported it.
// Healing waits for a
// healthy cluster; the roles stay switched, and later faults pick shards
// as the cluster sees them.
func (n *nemesis) switchover(primary, replica *localcluster.Node, force bool) drill.Fault {
	how := "coordinated"
	if force {
		how = "forced"
	}
	return drill.FaultFunc{Label: fmt.Sprintf("%s failover of %s to %s", how, primary.Addr, replica.Addr),
		InjectFn: func(ctx context.Context) error { return n.c.Failover(ctx, replica, force) },
		HealFn: func(ctx context.Context) error {
			return errors.Join(n.c.WaitRole(ctx, primary, "replica"), n.c.WaitHealthy(ctx))
		},
	}
}
