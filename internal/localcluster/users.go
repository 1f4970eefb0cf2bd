package localcluster

import (
	"context"
	"errors"
	"fmt"
)

// SetUser applies `ACL SETUSER name rules...` on every node and writes it
// into the node's configuration file (CONFIG REWRITE), so that a node
// restarted later still has it: ACL users are each node's own, not the
// cluster's, and a change made with ACL SETUSER alone lives in memory.
// Every node is tried; the error joins those that failed.
func (c *Cluster) SetUser(ctx context.Context, name string, rules ...string) error {
	args := []any{"ACL", "SETUSER", name}
	for _, r := range rules {
		args = append(args, r)
	}
	var errs []error
	for _, n := range c.Nodes() {
		cl := n.Client()
		err := cl.Do(ctx, args...).Err()
		if err == nil {
			err = cl.ConfigRewrite(ctx).Err()
		}
		cl.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("set user %s on %s: %w", name, n.Addr, err))
		}
	}
	return errors.Join(errs...)
}

// KillClients closes every connection authenticated as user on every node
// and returns how many there were.
func (c *Cluster) KillClients(ctx context.Context, user string) (int64, error) {
	var killed int64
	var errs []error
	for _, n := range c.Nodes() {
		cl := n.Client()
		k, err := cl.ClientKillByFilter(ctx, "USER", user).Result()
		cl.Close()
		killed += k
		if err != nil {
			errs = append(errs, fmt.Errorf("kill %s's connections on %s: %w", user, n.Addr, err))
		}
	}
	return killed, errors.Join(errs...)
}
