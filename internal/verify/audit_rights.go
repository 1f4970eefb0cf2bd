package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// aclLogLen is how many entries each node's ACL log keeps in a run, and
// how many are read: an entry counts one kind of refusal (reason, context,
// command or key, user), however many times.
const aclLogLen = 1024

// CodeRightsMissing: a node refused the instances' Redis user a command,
// key or channel that no fault took from it.
const CodeRightsMissing = "rights_missing"

// RightsMissing (Apollo's rights list is whole): the instances run as a
// user with exactly Apollo's rights (redisstore.ACLRules), so a command
// Apollo sends without its right in the list is refused, and the node
// logs it (ACL LOG). A refusal the workload's retries or a fault's 5xx
// hide still fails the run here: ASKING, sent only while a slot moves,
// was missing from the list and cost 22 answers during
// slot-migration-stuck, which verify allows. Refusals of INFO on a node
// rights-revoked took it from are that fault's own. One violation per
// node and command.
func RightsMissing(h History) []Violation {
	var out []Violation
	for _, d := range h.Denials {
		if d.Object == "info" && d.Reason == "command" && infoRevokedOn(h, d.Node) {
			continue
		}
		out = append(out, Violation{Code: CodeRightsMissing, Message: fmt.Sprintf(
			"%s refused the instances' user %q %d times (%s denied, %s): Apollo sends it, and its rights list (redisstore.Rights, apollo check --print-acl-rules) lacks it",
			d.Node, d.Object, d.Count, d.Reason, d.Context)})
	}
	return out
}

// infoRevokedOn reports whether rights-revoked took INFO on node during
// the run: a fault of that kind (alone or joint) injected on it, as its
// label names the node.
func infoRevokedOn(h History, node string) bool {
	return slices.ContainsFunc(h.Faults, func(f FaultEvent) bool {
		return f.Action == "inject" && usesFault([]string{f.Kind}, "rights-revoked") && strings.Contains(f.Fault+" ", revokedLabel+node+" ")
	})
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
		// A full log may have dropped the oldest refusals: not judged.
		entries, err := cl.ACLLog(ctx, aclLogLen).Result() // without a count, Redis gives 10
		cl.Close()
		if err == nil && len(entries) >= aclLogLen {
			err = fmt.Errorf("the log is full (%d entries): older refusals may be gone", aclLogLen)
		}
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
