package localcluster

import (
	"context"
	"strconv"
)

// StallReplication drops what primary sends replica on its replication
// link, and nothing else: the cluster bus, clients and the replica's own
// acknowledgements still pass. The replica falls behind without either
// side noticing (its link stays up until repl-timeout, 60 s by default),
// as one on a congested or lossy path does: the primary counts it in
// WAIT only with the offset it acknowledged last, and a forced failover
// of it promotes a replica without the writes made since. resume removes
// the rule; TCP then sends again what was dropped. It needs a cluster
// started with OwnAddrs; Close removes the rule too.
func (c *Cluster) StallReplication(ctx context.Context, primary, replica *Node) (resume func(context.Context) error, err error) {
	rules := [][]string{{"-s", primary.host(), "-d", replica.host(), "-p", "tcp", "--sport", strconv.Itoa(portOf(primary.Addr)), "-j", "DROP"}}
	resume = func(ctx context.Context) error { return c.removeRules(ctx, rules) }
	return resume, c.addRules(ctx, rules)
}
