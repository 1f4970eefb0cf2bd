package clustercheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// accessFindings turns what every node said to Apollo's credentials (as ACL
// user user) into findings: a node that refuses them is critical, since
// Apollo cannot use it; a node open without a password, one whose ACL cannot
// be read, and nodes whose ACL users or whose rules for Apollo's user differ
// are warnings. Pure: it only reads nodes.
func accessFindings(nodes []Node, user string) []Finding {
	var out []Finding
	warn := func(code, node, msg string) {
		out = append(out, Finding{Severity: Warning, Code: code, Node: node, Message: msg})
	}
	var aclDenied []string
	for _, n := range nodes {
		if n.CredentialsError != "" {
			out = append(out, Finding{Severity: Critical, Code: "credentials_rejected", Node: n.Addr, Message: fmt.Sprintf(
				"Apollo's credentials (user %q) fail on this %s: %s%s. Apollo cannot read or write through this node, and its ACL users were not compared",
				user, n.Role, strings.TrimSuffix(n.CredentialsError, "."), credentialHint(n.CredentialsError))})
		}
		if n.OpenWithoutAuth {
			warn("auth_not_required", n.Addr, fmt.Sprintf(
				"this %s serves clients that send no password, though Apollo is configured with one: anyone who can reach it can read and write", n.Role))
		}
		if len(n.Denied) > 0 {
			why := "what needs them would fail on this node"
			if slices.Contains(n.Denied, "multi") || slices.Contains(n.Denied, "discard") {
				why = "MULTI and DISCARD are how Apollo asks for the other rights without running them, so they are not known"
			}
			if slices.Contains(n.Denied, "info") {
				why = "without INFO no acknowledged write is ever confirmed: every booking would fail"
			}
			out = append(out, Finding{Severity: Critical, Code: "rights_denied", Node: n.Addr, Message: fmt.Sprintf(
				"Apollo's user %q may not run %s on this %s, so apollo serve refuses to start (%s); grant them on every node: ACL SETUSER %s %s",
				user, strings.Join(n.Denied, ", "), n.Role, why, user, strings.Join(redisroute.Grants(n.Denied), " "))})
		}

		switch {
		case n.ACLError == "" || n.CredentialsError != "":
		case strings.Contains(n.ACLError, "NOPERM"):
			aclDenied = append(aclDenied, n.Addr) // as a user with exactly Apollo's rights is
		default:
			warn("acl_unreadable", n.Addr, fmt.Sprintf(
				"the node's ACL cannot be read with Apollo's credentials (%s): its users are not compared with the other nodes'", n.ACLError))
		}
	}
	if len(aclDenied) > 0 {
		out = append(out, Finding{Severity: Info, Code: "acl_not_readable", Message: fmt.Sprintf(
			"Apollo's user %q may not read the ACL (as a user with exactly Apollo's rights may not), so the ACL users are not compared, on %s",
			user, strings.Join(aclDenied, ", "))})
	}
	users := groupNodes(nodes, func(n Node) (string, bool) { return strings.Join(n.ACLUsers, " "), n.ACLUsers != nil })
	for _, g := range users[min(1, len(users)):] {
		ref := users[0]
		for _, addr := range g.addrs {
			warn("acl_users_differ", addr, fmt.Sprintf("ACL users differ between nodes: this node has %s%s, while %s %s",
				orNone(g.key), userDiff(strings.Fields(g.key), strings.Fields(ref.key)), nodesPhrase(ref.addrs), orNone(ref.key)))
		}
	}
	rules := groupNodes(nodes, func(n Node) (string, bool) { return n.ACLUser, n.ACLUser != "" })
	for _, g := range rules[min(1, len(rules)):] {
		ref := rules[0]
		for _, addr := range g.addrs {
			warn("acl_user_differs", addr, fmt.Sprintf("the ACL rules of Apollo's user %q differ between nodes: here %s, while %s %s",
				user, g.key, nodesPhrase(ref.addrs), ref.key))
		}
	}
	return out
}

// credentialHint says in plain words what a refusal means.
func credentialHint(msg string) string {
	switch {
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "invalid username-password"), strings.Contains(msg, "invalid password"):
		return " (the password is wrong here, or the user does not exist or is disabled on this node)"
	case strings.Contains(msg, "without any password configured"):
		return " (this node has no password set, so it rejects the one Apollo sends)"
	case strings.Contains(msg, "NOAUTH"):
		return " (this node requires a password and Apollo sent none)"
	case strings.Contains(msg, "NOPERM"):
		return " (the user logs in but may not run a command Apollo needs)"
	}
	return ""
}

// nodeGroup is the nodes that share one value.
type nodeGroup struct {
	key   string
	addrs []string
}

// groupNodes groups the nodes for which key says ok by that key, the largest
// group first (ties in order of first appearance).
func groupNodes(nodes []Node, key func(Node) (string, bool)) []nodeGroup {
	var groups []nodeGroup
	index := map[string]int{}
	for _, n := range nodes {
		k, ok := key(n)
		if !ok {
			continue
		}
		i, seen := index[k]
		if !seen {
			i = len(groups)
			index[k] = i
			groups = append(groups, nodeGroup{key: k})
		}
		groups[i].addrs = append(groups[i].addrs, n.Addr)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].addrs) > len(groups[j].addrs) })
	return groups
}

// userDiff names the users in have but not in ref, and those in ref but not
// in have.
func userDiff(have, ref []string) string {
	extra, missing := minus(have, ref), minus(ref, have)
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, "extra: "+strings.Join(extra, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "missing: "+strings.Join(missing, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !has(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func nodesPhrase(addrs []string) string {
	if len(addrs) == 1 {
		return "node " + addrs[0] + " has"
	}
	return fmt.Sprintf("%d other nodes (%s) have", len(addrs), strings.Join(addrs, ", "))
}

func orNone(users string) string {
	if users == "" {
		return "no users"
	}
	return strings.ReplaceAll(users, " ", ", ")
}
