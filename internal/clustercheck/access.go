package clustercheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// configuredUser is the ACL user Apollo's credentials log in as: the
// configured one, or Redis's "default" user when only a password (or
// nothing) is configured.
func configuredUser(opts Options) string {
	if opts.Username != "" {
		return opts.Username
	}
	return "default"
}

// access records what the node says to Apollo's credentials and, when they
// work, its ACL users and the rules of Apollo's own user.
//
// The credentials are tried by probe: its keyed read runs on a fresh
// connection that authenticates with them (HELLO, then AUTH), on every node of
// the topology. A node that did not answer at all is left alone: probe has
// said so already.
func access(ctx context.Context, opts Options, n *Node) {
	if has(n.Flags, "fail") || has(n.Flags, "noaddr") || n.Error != "" && !credentialError(n.Error) {
		return
	}
	if opts.Password != "" {
		anon := opts
		anon.Username, anon.Password = "", ""
		c := client(anon, n.Addr, false)
		n.OpenWithoutAuth = c.Ping(ctx).Err() == nil
		c.Close()
	}
	if credentialError(n.Error) {
		n.CredentialsError = n.Error
		return
	}
	c := client(opts, n.Addr, false)
	defer c.Close()
	if len(opts.Rights) > 0 {
		// Not judged when the node cannot be asked: probe says why.
		n.Denied, _ = redisroute.DeniedRights(ctx, c, opts.Rights)
	}
	users, err := c.ACLUsers(ctx).Result()
	if err != nil {
		n.ACLError = fmt.Sprintf("ACL USERS: %v", err)
		return
	}
	sort.Strings(users)
	n.ACLUsers = users
	// ACL GETUSER may be denied to Apollo's user; then its rules are simply
	// not compared.
	if v, err := c.Do(ctx, "ACL", "GETUSER", configuredUser(opts)).Result(); err == nil {
		n.ACLUser = describeACLUser(v)
	} else if errors.Is(err, redis.Nil) {
		n.ACLUser = "no such user"
	}
}

// credentialError reports whether a node's answer means it refused the
// credentials (or their permissions) rather than failed to answer.
func credentialError(msg string) bool {
	for _, s := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "without any password configured", "invalid password", "invalid username-password"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// describeACLUser renders an ACL GETUSER answer (RESP2: field, value, ...)
// as one comparable line. Password hashes are cut to 8 hex digits: enough to
// tell two passwords apart, not worth printing whole.
func describeACLUser(v any) string {
	fields, _ := v.([]any)
	parts := make([]string, 0, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		k, val := fmt.Sprint(fields[i]), fields[i+1]
		if k == "passwords" {
			val = shortHashes(val)
		}
		parts = append(parts, k+" "+renderACL(val))
	}
	return strings.Join(parts, "; ")
}

func shortHashes(v any) any {
	hs, _ := v.([]any)
	out := make([]any, len(hs))
	for i, h := range hs {
		s := fmt.Sprint(h)
		out[i] = "#" + s[:min(8, len(s))]
	}
	return out
}

func renderACL(v any) string {
	list, ok := v.([]any)
	if !ok {
		return fmt.Sprint(v)
	}
	parts := make([]string, len(list))
	for i, x := range list {
		parts[i] = renderACL(x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
