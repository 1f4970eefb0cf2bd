package localcluster

import (
	"context"
	"fmt"
	"strings"
)

// WaitHealthy waits until every node runs and the cluster is fully usable:
// cluster_state:ok on every node, every node's CLUSTER SLOTS lists the
// primary and every replica of every slot range, and every replica's link
// to its primary is up. Measurements taken before this are misleading.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	var why string
	err := c.poll(ctx, "the cluster is healthy", func(ctx context.Context) (bool, error) {
		var ok bool
		ok, why = c.healthy(ctx)
		return ok, nil
	})
	if err != nil && why != "" {
		return fmt.Errorf("%w (last: %s)", err, why)
	}
	return err
}

// healthy reports whether the cluster is healthy, and if not, why.
func (c *Cluster) healthy(ctx context.Context) (bool, string) {
	want := 1 + c.cfg.Replicas
	for _, n := range c.nodes {
		if n.State() != Running {
			return false, n.Addr + " is " + string(n.State())
		}
		cl := n.Client()
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			cl.Close()
			return false, n.Addr + " cluster_state not ok"
		}
		slots, err := cl.ClusterSlots(ctx).Result()
		if err != nil {
			cl.Close()
			return false, fmt.Sprintf("%s CLUSTER SLOTS: %v", n.Addr, err)
		}
		covered := 0
		for _, s := range slots {
			if len(s.Nodes) != want {
				cl.Close()
				return false, fmt.Sprintf("%s lists %d nodes for slots %d-%d, want %d", n.Addr, len(s.Nodes), s.Start, s.End, want)
			}
			covered += s.End - s.Start + 1
		}
		open, oerr := ownOpenSlots(ctx, cl)
		repl, err := cl.Info(ctx, "replication").Result()
		cl.Close()
		switch {
		case oerr != nil:
			return false, oerr.Error()
		case len(open) > 0:
			return false, fmt.Sprintf("%s has slot migrations open: %v", n.Addr, open)
		}
		if covered != totalSlots {
			return false, fmt.Sprintf("%s covers %d slots", n.Addr, covered)
		}
		if err != nil {
			return false, err.Error()
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return false, n.Addr + " replication link down"
		}
	}
	return true, ""
}

// WaitFlagged waits until every running node other than n flags n with
// flag ("fail?" or "fail") in CLUSTER NODES.
func (c *Cluster) WaitFlagged(ctx context.Context, n *Node, flag string) error {
	return c.poll(ctx, n.Addr+" is flagged "+flag, func(ctx context.Context) (bool, error) {
		seen := 0
		for _, o := range c.nodes {
			if o == n || o.State() != Running {
				continue
			}
			view, err := c.view(ctx, o)
			if err != nil {
				return false, nil
			}
			for _, v := range view {
				if v.ID == n.ID() && !v.Has(flag) {
					return false, nil
				}
			}
			seen++
		}
		return seen > 0, nil
	})
}

// WaitRole waits until node n itself reports the role "primary" or "replica".
func (c *Cluster) WaitRole(ctx context.Context, n *Node, role string) error {
	if role != "primary" && role != "replica" {
		return fmt.Errorf("role must be primary or replica, got %q", role)
	}
	return c.poll(ctx, n.Addr+" is "+role, func(ctx context.Context) (bool, error) {
		view, err := c.view(ctx, n)
		if err != nil {
			return false, nil
		}
		for _, v := range view {
			if v.Has("myself") {
				return v.IsPrimary() == (role == "primary"), nil
			}
		}
		return false, nil
	})
}

// NodeInfo describes a node as the cluster currently sees it.
type NodeInfo struct {
	Addr        string    `json:"addr"`
	ID          string    `json:"id"`
	Shard       int       `json:"shard"`
	Role        string    `json:"role"` // primary or replica
	PrimaryAddr string    `json:"primary,omitempty"`
	PID         int       `json:"pid"`
	State       ProcState `json:"state"`
	Flags       []string  `json:"flags"`
}

// Info returns every node's role and flags as seen by the first running node
// that answers, together with what this package knows of its process.
func (c *Cluster) Info(ctx context.Context) ([]NodeInfo, error) {
	var view []NodeView
	var lastErr error = ErrClosed
	for _, n := range c.nodes {
		if n.State() != Running {
			continue
		}
		if view, lastErr = c.view(ctx, n); lastErr == nil {
			break
		}
	}
	if view == nil {
		return nil, fmt.Errorf("no node answered CLUSTER NODES: %w", lastErr)
	}
	byID := map[string]NodeView{}
	for _, v := range view {
		byID[v.ID] = v
	}
	out := make([]NodeInfo, 0, len(c.nodes))
	for _, n := range c.nodes {
		v := byID[n.ID()]
		info := NodeInfo{Addr: n.Addr, ID: n.ID(), Shard: n.Shard, PID: n.PID(), State: n.State(), Flags: v.Flags, Role: "replica"}
		if v.IsPrimary() {
			info.Role = "primary"
		}
		if p, ok := byID[v.PrimaryID]; ok {
			info.PrimaryAddr = p.Addr
		}
		out = append(out, info)
	}
	return out, nil
}

// Primary returns the running, unflagged node that currently serves shard s
// as primary, as seen by the cluster, or nil.
func (c *Cluster) Primary(ctx context.Context, shard int) *Node {
	return c.first(ctx, shard, "primary")
}

// Replicas returns the running, unflagged nodes that currently are replicas in shard s.
func (c *Cluster) Replicas(ctx context.Context, shard int) []*Node {
	infos, err := c.Info(ctx)
	if err != nil {
		return nil
	}
	var out []*Node
	for i, in := range infos {
		if in.Shard == shard && in.Role == "replica" && in.State == Running && !in.failed() {
			out = append(out, c.nodes[i])
		}
	}
	return out
}

func (c *Cluster) first(ctx context.Context, shard int, role string) *Node {
	infos, err := c.Info(ctx)
	if err != nil {
		return nil
	}
	for i, in := range infos {
		if in.Shard == shard && in.Role == role && in.State == Running && !in.failed() {
			return c.nodes[i]
		}
	}
	return nil
}

func (in NodeInfo) failed() bool {
	for _, f := range in.Flags {
		if f == "fail" || f == "fail?" {
			return true
		}
	}
	return false
}
