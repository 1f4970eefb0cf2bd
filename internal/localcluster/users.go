package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apollo-platform/apollo/internal/secret"
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
			errs = append(errs, fmt.Errorf("set user %s on %s: %w", name, n.Addr, Redacted(err, passwords(rules)...)))
		}
	}
	return errors.Join(errs...)
}

// passwords are the passwords, or their hashes, that ACL rules add or
// remove (>p, <p, #hash, !hash).
func passwords(rules []string) []string {
	var out []string
	for _, r := range rules {
		if len(r) > 1 && strings.ContainsRune("><#!", rune(r[0])) {
			out = append(out, r[1:])
		}
	}
	return out
}

// Redacted is err with every one of secrets in its text replaced by
// secret.Redacted: Redis quotes a rule it refuses (ACL SETUSER's
// "Error in ACL SETUSER modifier '<p'"), password and all. It keeps no
// chain: only the text is needed.
func Redacted(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, secret.Redacted)
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
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
