package clustercheck

import (
	"fmt"
	"slices"
	"time"
)

// assess turns what was seen into findings with plain explanations.
func assess(rep *Report) {
	if rep.ClusterState != "ok" {
		rep.add(Critical, "cluster_state", rep.Seed, fmt.Sprintf("cluster_state is %q: the cluster refuses commands", rep.ClusterState))
	}
	covered := 0
	for _, s := range rep.Shards {
		covered += s.Slots
	}
	if covered < 16384 {
		rep.add(Critical, "slots_uncovered", "", fmt.Sprintf("only %d of 16384 slots have a primary: keys in the rest cannot be read or written", covered))
	}
	for _, n := range rep.Nodes {
		switch {
		case hasAny(n.Flags, "fail") && n.Role == "primary" && n.Slots > 0:
			rep.add(Critical, "primary_failed", n.Addr, "a primary is flagged failed and still owns slots")
		case hasAny(n.Flags, "fail", "fail?"):
			rep.add(Warning, "node_failing", n.Addr, fmt.Sprintf("%s is flagged %v; clients that trust CLUSTER SLOTS may still route to it", n.Role, n.Flags))
		case n.CredentialsError != "":
			// refused, not unreachable: accessFindings says so, as critical
		case !n.Reachable:
			rep.add(Warning, "node_unreachable", n.Addr, fmt.Sprintf("%s did not answer a read: %s (the cluster does not know yet, so topology-only clients keep sending to it)", n.Role, n.Error))
		}
		if n.LinkUp != nil && !*n.LinkUp {
			rep.add(Warning, "replication_down", n.Addr, "the replica's link to its primary is down: its reads are stale")
		}
		if n.LagBytes != nil && *n.LagBytes > maxLagBytes {
			rep.add(Warning, "replication_lag", n.Addr, fmt.Sprintf("the replica is %d bytes behind its primary", *n.LagBytes))
		}
	}
	for _, s := range rep.Shards {
		if len(s.Replicas) < minReplicasShard {
			rep.add(Warning, "few_replicas", s.Primary, fmt.Sprintf("the shard has %d replica(s): with replica reads, one failure leaves its reads on a single node (or on the primary)", len(s.Replicas)))
		}
	}
	for _, f := range accessFindings(rep.Nodes, rep.User) {
		rep.add(f.Severity, f.Code, f.Node, f.Message)
	}
	if nt := time.Duration(rep.NodeTimeoutMs) * time.Millisecond; nt > maxNodeTimeout {
		rep.add(Warning, "node_timeout", "", fmt.Sprintf("cluster-node-timeout is %s: a dead replica stays in CLUSTER SLOTS for about %s, and clients that route by topology alone keep reading from it that long", nt, nt+nt/3))
	}
	if rep.AllowReadsWhenDown == "no" {
		rep.add(Warning, "reads_when_down", "", "cluster-allow-reads-when-down is no: while a failed primary is being replaced, every node refuses reads for every slot (CLUSTERDOWN)")
	}
	for _, f := range slices.Concat(persistenceFindings(rep.Nodes), diskFindings(rep.Nodes), memoryFindings(rep.Nodes), clockFindings(rep.Nodes), migrationFindings(rep.Nodes), certFindings(rep.Nodes, rep.CheckedAt)) {
		rep.add(f.Severity, f.Code, f.Node, f.Message)
	}
	rep.add(Info, "read_policy", "", policyAdvice(rep.ReadPolicy))
}

func hasAny(flags []string, want ...string) bool {
	for _, w := range want {
		if has(flags, w) {
			return true
		}
	}
	return false
}

func policyAdvice(p string) string {
	switch p {
	case "primary":
		return "read policy primary: a replica failure does not affect reads; primaries carry all the read load"
	case "nearest":
		return "read policy nearest: reads go to the fastest healthy node; a dead or hung replica is ejected within milliseconds and reads move to the other nodes of its shard"
	case "legacy-2019":
		return "read policy legacy-2019: the 2019 setup; a dead replica fails most batch reads until the 60 s refresh"
	}
	return "read policy replica-preferred: reads go to replicas; a dead or hung replica is ejected within milliseconds, its reads move to the other replica, then to the primary (capped)"
}
