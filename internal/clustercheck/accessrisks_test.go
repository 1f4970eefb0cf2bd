package clustercheck

import (
	"strings"
	"testing"
)

func TestAccessFindings(t *testing.T) {
	const rules = "flags [on]; passwords [#2bb80d53]; commands +@all; keys ~*; channels &*; selectors []"
	ok := func(addr string, users ...string) Node {
		return Node{Addr: addr, Role: "replica", Reachable: true, ACLUsers: users, ACLUser: rules}
	}
	with := func(n Node, edit func(*Node)) Node { edit(&n); return n }
	type want struct {
		sev  Severity
		code string
		node string
		says []string // substrings of the message
	}
	tests := []struct {
		name  string
		nodes []Node
		want  []want
	}{
		{"the same everywhere", []Node{ok("a", "apollo", "default"), ok("b", "apollo", "default"), ok("c", "apollo", "default")}, nil},
		{"unreachable and failed nodes are not compared", []Node{ok("a", "apollo", "default"), {Addr: "b", Error: "i/o timeout"}, {Addr: "c", Flags: []string{"fail"}}}, nil},
		{"wrong password on one node", []Node{
			ok("a", "apollo", "default"),
			{Addr: "b", Role: "replica", CredentialsError: "failed to authenticate: WRONGPASS invalid username-password pair or user is disabled."},
			ok("c", "apollo", "default"),
		}, []want{{Critical, "credentials_rejected", "b", []string{`user "apollo"`, "WRONGPASS", "password is wrong", "cannot read or write"}}}},
		{"permission denied", []Node{ok("a", "apollo"), {Addr: "b", Role: "primary", CredentialsError: "NOPERM User apollo has no permissions to run the 'exists' command"}},
			[]want{{Critical, "credentials_rejected", "b", []string{"primary", "NOPERM", "may not run a command"}}}},
		{"no password sent to a node that wants one", []Node{{Addr: "a", Role: "primary", CredentialsError: "NOAUTH Authentication required."}},
			[]want{{Critical, "credentials_rejected", "a", []string{"NOAUTH", "requires a password"}}}},
		{"a node without a password", []Node{
			ok("a", "apollo", "default"),
			{Addr: "b", Role: "replica", OpenWithoutAuth: true, CredentialsError: "ERR AUTH <password> called without any password configured for the default user."},
		}, []want{
			{Critical, "credentials_rejected", "b", []string{"no password set"}},
			{Warning, "auth_not_required", "b", []string{"send no password", "anyone"}},
		}},
		{"open, yet the credentials work", []Node{with(ok("a", "apollo"), func(n *Node) { n.OpenWithoutAuth = true })},
			[]want{{Warning, "auth_not_required", "a", []string{"send no password"}}}},
		{"an extra user on one node", []Node{ok("a", "apollo", "default"), ok("b", "apollo", "default", "intruder"), ok("c", "apollo", "default")},
			[]want{{Warning, "acl_users_differ", "b", []string{"apollo, default, intruder", "extra: intruder", "2 other nodes (a, c) have apollo, default"}}}},
		{"a user missing on two nodes", []Node{ok("a", "apollo", "default"), ok("b", "default"), ok("c", "apollo", "default"), ok("d", "default"), ok("e", "apollo", "default")},
			[]want{
				{Warning, "acl_users_differ", "b", []string{"missing: apollo", "3 other nodes (a, c, e)"}},
				{Warning, "acl_users_differ", "d", []string{"missing: apollo"}},
			}},
		{"ACL unreadable on one node", []Node{ok("a", "apollo"), {Addr: "b", Reachable: true, ACLError: "ACL USERS: ERR unknown command 'ACL'"}, ok("c", "apollo")},
			[]want{{Warning, "acl_unreadable", "b", []string{"cannot be read", "unknown command", "not compared"}}}},
		{"ACL not to be read by Apollo's user", []Node{
			{Addr: "a", Reachable: true, ACLError: "ACL USERS: NOPERM this user has no permissions to run the 'acl|users' command"},
			{Addr: "b", Reachable: true, ACLError: "ACL USERS: NOPERM this user has no permissions to run the 'acl|users' command"},
		}, []want{{Info, "acl_not_readable", "", []string{`user "apollo" may not read the ACL`, "exactly Apollo's rights", "not compared, on a, b"}}}},
		{"rights denied", []Node{ok("a", "apollo"), with(ok("b", "apollo"), func(n *Node) { n.Role, n.Denied = "primary", []string{"info", "set (keys)", "wait"} })},
			[]want{{Critical, "rights_denied", "b", []string{`user "apollo" may not run info, set (keys), wait on this primary`, "refuses to start", "without INFO", "ACL SETUSER apollo +info ~apollo:* +wait"}}}},
		{"a data command denied", []Node{with(ok("a", "apollo"), func(n *Node) { n.Denied = []string{"zadd"} })},
			[]want{{Critical, "rights_denied", "a", []string{"may not run zadd on this replica", "would fail on this node", "ACL SETUSER apollo +zadd"}}}},
		{"the check's own MULTI denied", []Node{with(ok("a", "apollo"), func(n *Node) { n.Denied = []string{"multi"} })},
			[]want{{Critical, "rights_denied", "a", []string{"may not run multi", "not known", "ACL SETUSER apollo +multi"}}}},
		{"the user's rules differ", []Node{ok("a", "apollo"), with(ok("b", "apollo"), func(n *Node) { n.ACLUser = strings.Replace(rules, "+@all", "+@all -flushall", 1) }), ok("c", "apollo")},
			[]want{{Warning, "acl_user_differs", "b", []string{`user "apollo"`, "+@all -flushall", "2 other nodes (a, c) have flags [on]"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := accessFindings(tt.nodes, "apollo")
			if len(got) != len(tt.want) {
				t.Fatalf("accessFindings = %d findings, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				f := got[i]
				if f.Severity != w.sev || f.Code != w.code || f.Node != w.node {
					t.Errorf("finding %d = %s %s %s, want %s %s %s", i, f.Severity, f.Code, f.Node, w.sev, w.code, w.node)
				}
				for _, s := range w.says {
					if !strings.Contains(f.Message, s) {
						t.Errorf("finding %d (%s) does not say %q: %s", i, f.Code, s, f.Message)
					}
				}
			}
		})
	}
}

func TestDescribeACLUser(t *testing.T) {
	getuser := []any{"flags", []any{"on"}, "passwords", []any{"2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"},
		"commands", "+@all", "keys", "~*", "channels", "&*", "selectors", []any{}}
	want := "flags [on]; passwords [#2bb80d53]; commands +@all; keys ~*; channels &*; selectors []"
	if got := describeACLUser(getuser); got != want {
		t.Errorf("describeACLUser = %q, want %q", got, want)
	}
}

func TestCredentialError(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"failed to authenticate: WRONGPASS invalid username-password pair or user is disabled.", true},
		{"NOAUTH Authentication required.", true},
		{"NOPERM User apollo has no permissions to run the 'exists' command", true},
		{"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", true},
		{"dial tcp 127.0.0.1:1: connect: connection refused", false},
		{"i/o timeout", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := credentialError(tt.msg); got != tt.want {
			t.Errorf("credentialError(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}
