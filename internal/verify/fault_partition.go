package verify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// partitionFault cuts a primary off from every other node while Apollo
// still reaches it: the majority promotes one of its replicas, and the old
// primary goes on taking Apollo's writes until it sees it is in the
// minority (cluster-node-timeout). None of those writes reaches a replica,
// so WAIT tells Apollo so, and every one of them is dropped when the old
// primary rejoins as a replica of the new one: the failover that undoes a
// write. The heal keeps the partition until a replica has been promoted.
type partitionFault struct {
	c        *localcluster.Cluster
	n        *nemesis
	primary  *localcluster.Node
	replicas []*localcluster.Node

	before changes
	effect string
}

func (p *partitionFault) Name() string {
	return "primary " + p.primary.Addr + " partitioned from the rest of the cluster"
}

func (p *partitionFault) Inject(ctx context.Context) error {
	p.before, _ = changesOf(ctx, p.primary)
	return p.c.Isolate(ctx, p.primary)
}

func (p *partitionFault) Heal(ctx context.Context) error {
	// Promotion gets part of the heal's time, so that the partition is
	// always healed within it, promoted or not.
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	errPromote := p.n.waitPromoted(pctx, p.replicas)
	cancel()
	after, errChanges := changesOf(ctx, p.primary)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.c.Rejoin(rctx, p.primary); err != nil {
		return errors.Join(errPromote, err)
	}
	if errPromote == nil && errChanges == nil {
		p.effect = fmt.Sprintf("the minority primary took %s while partitioned (confirmed reads' fence writes among them); none reached a replica, and all were dropped when it rejoined as a replica",
			after.since(p.before))
	}
	errRole := p.c.WaitRole(ctx, p.primary, "replica")
	return errors.Join(errPromote, errRole, p.c.WaitHealthy(ctx))
}

func (p *partitionFault) Effect() string { return p.effect }

// changes is a node's count of writes that changed its data set
// (rdb_changes_since_last_save), which a snapshot resets.
type changes struct {
	n        int64
	lastSave string
}

func (c changes) since(before changes) string {
	if c.lastSave != before.lastSave {
		return "an unknown number of changes (a snapshot reset the count)"
	}
	return strconv.FormatInt(c.n-before.n, 10) + " changes"
}

func changesOf(ctx context.Context, node *localcluster.Node) (changes, error) {
	info, err := node.Info(ctx, "persistence")
	if err != nil {
		return changes{}, err
	}
	var c changes
	for _, l := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ":")
		switch k {
		case "rdb_changes_since_last_save":
			c.n, _ = strconv.ParseInt(v, 10, 64)
		case "rdb_last_save_time":
			c.lastSave = v
		}
	}
	return c, nil
}
