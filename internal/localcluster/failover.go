package localcluster

import (
	"context"
	"fmt"
)

// Failover makes replica n its shard's primary with CLUSTER FAILOVER, and
// waits until n reports itself primary. Coordinated (force false), its
// primary stops taking writes until n has caught up; forced, n takes over
// at once with whatever it has received, and the old primary takes writes
// until it learns.
func (c *Cluster) Failover(ctx context.Context, n *Node, force bool) error {
	args := []any{"CLUSTER", "FAILOVER"}
	if force {
		args = append(args, "FORCE")
	}
	cl := n.Client()
	err := cl.Do(ctx, args...).Err()
	cl.Close()
	if err != nil {
		return fmt.Errorf("%v on %s: %w", args, n.Addr, err)
	}
	return c.WaitRole(ctx, n, "primary")
}
