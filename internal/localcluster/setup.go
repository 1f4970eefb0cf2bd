package localcluster

import (
	"context"
	"fmt"
	"strings"
	"time"
)

const totalSlots = 16384

// form turns the started nodes into a cluster with a deterministic layout:
// node i < Primaries is the primary of shard i with slots split evenly, and
// the replicas of shard s follow in order. This is what redis-cli --cluster
// create does, without its random placement, so tests know which node is which.
//
// Every node meets every other directly, rather than through gossip, and
// each replica, once it replicates its primary, meets them all again:
// a node learns another's primary only from that node's own messages, and
// without a new meeting the replicas' next ones were their periodic pings,
// up to half a node timeout away. A cluster took 5 to 10 s to form here.
func (c *Cluster) form(ctx context.Context) error {
	for _, n := range c.nodes {
		cl := n.Client()
		id, err := cl.ClusterMyID(ctx).Result()
		cl.Close()
		if err != nil {
			return fmt.Errorf("CLUSTER MYID on %s: %w", n.Addr, err)
		}
		n.id = id
	}
	if err := c.assignSlots(ctx); err != nil {
		return err
	}
	if err := c.meetAll(ctx); err != nil {
		return err
	}
	if err := c.attachReplicas(ctx); err != nil {
		return err
	}
	return c.announceReplicas(ctx)
}

// synced reports whether replica n has its primary's data: its link is
// up and it has taken some of the stream. Redis 7's CLUSTER SLOTS leaves
// out a replica whose offset, as the answering node last heard it, is 0.
func synced(ctx context.Context, n *Node) bool {
	info, err := n.Info(ctx, "replication")
	return err == nil && infoValue(info, "master_link_status") == "up" && InfoField(info, "slave_repl_offset") > 0
}

func (c *Cluster) assignSlots(ctx context.Context) error {
	p := c.cfg.Primaries
	for i := 0; i < p; i++ {
		lo, hi := i*totalSlots/p, (i+1)*totalSlots/p-1
		cl := c.nodes[i].Client()
		err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil {
			// Distinct epochs spare the cluster a round of epoch-collision resolution.
			err = cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		cl.Close()
		if err != nil {
			return fmt.Errorf("assign slots %d-%d to %s: %w", lo, hi, c.nodes[i].Addr, err)
		}
	}
	return nil
}

func (c *Cluster) attachReplicas(ctx context.Context) error {
	for _, n := range c.nodes[c.cfg.Primaries:] {
		primary := c.nodes[n.Shard]
		cl := n.Client()
		err := cl.ClusterReplicate(ctx, primary.id).Err()
		cl.Close()
		if err != nil {
			return fmt.Errorf("CLUSTER REPLICATE %s -> %s: %w", n.Addr, primary.Addr, err)
		}
	}
	return nil
}

// announceReplicas has each replica, once synced, meet every other node
// again: the MEET message carries its primary and its offset, which a
// node that knows the sender records at once.
func (c *Cluster) announceReplicas(ctx context.Context) error {
	for _, r := range c.nodes[c.cfg.Primaries:] {
		if err := c.poll(ctx, r.Addr+" has its primary's data", func(ctx context.Context) (bool, error) { return synced(ctx, r), nil }); err != nil {
			return err
		}
		for _, n := range c.nodes {
			if n == r {
				continue
			}
			if err := c.meet(ctx, r, n); err != nil {
				return err
			}
		}
	}
	// Each new meeting opened a handshake with a node the replica knows,
	// which its answer closes.
	return c.waitAcquainted(ctx)
}

// meetAll has every node meet every other, and waits until every node
// knows every other.
func (c *Cluster) meetAll(ctx context.Context) error {
	for i, a := range c.nodes {
		for _, b := range c.nodes[i+1:] {
			if err := c.meet(ctx, a, b); err != nil {
				return err
			}
		}
	}
	return c.waitAcquainted(ctx)
}

// waitAcquainted waits until every node knows every other, and no
// handshake is left open.
func (c *Cluster) waitAcquainted(ctx context.Context) error {
	return c.poll(ctx, "every node knows every other node", func(ctx context.Context) (bool, error) {
		for _, n := range c.nodes {
			view, err := c.view(ctx, n)
			if err != nil {
				return false, nil
			}
			if len(view) != len(c.nodes) {
				return false, nil
			}
			for _, v := range view {
				if v.Has("handshake") || v.Has("noaddr") {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// meet has node a start a handshake with node b.
func (c *Cluster) meet(ctx context.Context, a, b *Node) error {
	cl := a.Client()
	defer cl.Close()
	if err := cl.Do(ctx, "CLUSTER", "MEET", b.host(), portOf(b.Addr), b.BusPort).Err(); err != nil {
		return fmt.Errorf("CLUSTER MEET %s from %s: %w", b.Addr, a.Addr, err)
	}
	return nil
}

// poll calls check every 50 ms until it reports done, returns an error, or ctx ends.
func (c *Cluster) poll(ctx context.Context, what string, check func(context.Context) (bool, error)) error {
	for {
		ok, err := check(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NodeView is one line of CLUSTER NODES as seen by some node.
type NodeView struct {
	ID        string
	Addr      string
	Flags     []string
	PrimaryID string // "" for a primary
	LinkUp    bool
	Slots     []string
}

// Has reports whether the view carries the flag (myself, master, slave, fail?, fail, handshake, noaddr).
func (v NodeView) Has(flag string) bool {
	for _, f := range v.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// IsPrimary reports whether the node is a primary in this view.
func (v NodeView) IsPrimary() bool { return v.Has("master") }

func parseClusterNodes(s string) []NodeView {
	var out []NodeView
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr := f[1]
		if i := strings.IndexByte(addr, '@'); i >= 0 {
			addr = addr[:i]
		}
		v := NodeView{ID: f[0], Addr: addr, Flags: strings.Split(f[2], ","), LinkUp: f[7] == "connected", Slots: f[8:]}
		if f[3] != "-" {
			v.PrimaryID = f[3]
		}
		out = append(out, v)
	}
	return out
}

// view returns CLUSTER NODES as node n sees it.
func (c *Cluster) view(ctx context.Context, n *Node) ([]NodeView, error) {
	cl := n.Client()
	defer cl.Close()
	s, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(s), nil
}
