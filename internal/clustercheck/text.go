package clustercheck

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report for a person.
func WriteText(w io.Writer, rep Report) {
	timeout := "- (CONFIG GET not allowed)" // a node timeout is never 0
	if rep.NodeTimeoutMs > 0 {
		timeout = fmt.Sprintf("%d ms", rep.NodeTimeoutMs)
	}
	fmt.Fprintf(w, "cluster_state: %s   slots covered: %d/16384   node timeout: %s   allow reads when down: %s\n\n",
		rep.ClusterState, rep.SlotsCovered, timeout, orDash(rep.AllowReadsWhenDown))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tPRIMARY\tSLOTS\tFLAGS\tREAD\tLINK\tLAG\tAUTH")
	for _, n := range rep.Nodes {
		read := "unreachable"
		if n.Reachable {
			read = fmt.Sprintf("%.2f ms", n.ProbeMs)
		} else if n.CredentialsError != "" {
			read = "refused"
		}
		link, lag := "-", "-"
		if n.LinkUp != nil {
			link = map[bool]string{true: "up", false: "DOWN"}[*n.LinkUp]
		}
		if n.LagBytes != nil {
			lag = fmt.Sprintf("%d B", *n.LagBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", n.Addr, n.Role, orDash(n.Primary), n.Slots, strings.Join(n.Flags, ","), read, link, lag, authColumn(n))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, f := range rep.Findings {
		where := ""
		if f.Node != "" {
			where = " " + f.Node
		}
		fmt.Fprintf(w, "[%s] %s%s: %s\n", strings.ToUpper(f.Severity.String()), f.Code, where, f.Message)
	}
	fmt.Fprintf(w, "\nstatus: %s\n", rep.Status)
}

// authColumn is how the node took Apollo's credentials.
func authColumn(n Node) string {
	switch {
	case n.CredentialsError != "":
		return "REJECTED"
	case !n.Reachable:
		return "-"
	case n.OpenWithoutAuth:
		return "ok, OPEN"
	}
	return "ok"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
