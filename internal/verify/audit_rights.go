package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// CodeRightsMissing: a node refused the instances' Redis user a command,
// key or channel that no fault took from it.
const CodeRightsMissing = "rights_missing"

// RightsMissing (Apollo's rights list is whole): the instances run as a
// user with exactly Apollo's rights (redisstore.ACLRules), so a command
// Apollo sends without its right in the list is refused, and the node
// logs it (ACL LOG). A refusal the workload's retries or a fault's 5xx
// hide still fails the run here: ASKING, sent only while a slot moves,
// was missing from the list and cost 22 answers during
// slot-migration-stuck, which verify allows. Refusals of INFO are the
// rights-revoked fault's own while it was injected in the run. One
// violation per node and command.
func RightsMissing(h History) []Violation {
	revoked := false
	for _, f := range h.Faults {
		revoked = revoked || f.Action == "inject" && f.Err == "" && usesFault([]string{f.Kind}, "rights-revoked")
	}
	var out []Violation
	for _, d := range h.Denials {
		if revoked && d.Object == "info" && d.Reason == "command" {
			continue
		}
		out = append(out, Violation{Code: CodeRightsMissing, Message: fmt.Sprintf(
			"%s refused the instances' user %q %d times (%s denied, %s): Apollo sends it, and its rights list (redisstore.Rights, apollo check --print-acl-rules) lacks it",
			d.Node, d.Object, d.Count, d.Reason, d.Context)})
	}
	return out
}

// rightsUnjudged skips RightsMissing on a history whose ACL logs were
// not read.
func rightsUnjudged(h History) string {
	if !h.ACLLogRead {
		return "the nodes' ACL logs were not read (an older apollo verify, or a node did not answer)"
	}
	return ""
}

// readDenials reads every node's ACL LOG for user's refusals other than
// of its credentials. ok is false when a node's log could not be read.
func readDenials(ctx context.Context, c *localcluster.Cluster, user string) (out []Denial, ok bool, err error) {
	var errs []error
	for _, n := range c.Nodes() {
		cl := n.Client()
		entries, err := cl.ACLLog(ctx, 0).Result()
		cl.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("ACL LOG on %s: %w", n.Addr, err))
			continue
		}
		for _, e := range entries {
			if e.Username == user && e.Reason != "auth" {
				out = append(out, Denial{Node: n.Addr, Reason: e.Reason, Context: e.Context, Object: e.Object, Count: e.Count})
			}
		}
	}
	return out, len(errs) == 0, errors.Join(errs...)
}
