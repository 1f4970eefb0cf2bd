package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// cutOffFault cuts one Apollo instance off from every Redis node while
// its clients still reach it, as a host that lost its path to Redis (a
// broken route, a security group, a half-failed network card): nothing is
// refused, every packet is lost both ways. The instance's calls time out;
// its writes in flight are sent again by TCP when the path returns, past
// their deadlines; its partition leases lapse while it runs, and the other
// instances take its work over. The load balancer's health checks
// (/readyz: no shard answers) take it out meanwhile.
//
// With a node, only the path between the instance and that node is cut,
// as a firewall rule or a route on one host does: the cluster sees nothing
// wrong, and neither do the other instances. A replica cut off so is the
// 2019 incident from one instance's side: the cluster's view keeps
// offering it, and the instance must stop sending it reads on its own.
//
// With answersOnly, only the node's packets to the instance are lost: its
// commands arrive and run, their answers never come, and no new connection
// is made. Every write it sends then is done and of unknown outcome to it:
// it must never say one was not applied, and a retry elsewhere must find
// what it did.
type cutOffFault struct {
	c           *localcluster.Cluster
	in          *Instance
	node        *localcluster.Node // nil: every node
	role        string             // node's: primary, replica
	answersOnly bool
	reconnect   func(context.Context) error
}

func (f *cutOffFault) Name() string {
	if f.answersOnly {
		return fmt.Sprintf("instance hears no answer from %s %s (packets to %s dropped, not from it) %s", f.role, f.node.Addr, f.in.RedisSource, f.in.Name)
	}
	if f.node != nil {
		return fmt.Sprintf("instance cut off from %s %s (%s dropped both ways) %s", f.role, f.node.Addr, f.in.RedisSource, f.in.Name)
	}
	return fmt.Sprintf("instance cut off from every Redis node (%s dropped both ways) %s", f.in.RedisSource, f.in.Name)
}

func (f *cutOffFault) Inject(ctx context.Context) error {
	if f.in.RedisSource == "" {
		return errors.New(f.in.Name + "'s build has no --redis-source-addr: it cannot be cut off alone")
	}
	var err error
	var nodes []*localcluster.Node
	if f.node != nil {
		nodes = append(nodes, f.node)
	}
	cut := f.c.CutOff
	if f.answersOnly {
		cut = f.c.CutAnswers
	}
	f.reconnect, err = cut(ctx, f.in.RedisSource, nodes...)
	return err
}

func (f *cutOffFault) Heal(ctx context.Context) error {
	if f.reconnect == nil {
		return nil
	}
	return f.reconnect(ctx)
}
