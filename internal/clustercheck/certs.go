package clustercheck

import (
	"fmt"
	"time"
)

// certWarnBefore is how long before a node's TLS certificate expires it is
// warned of, as alert ApolloRedisNodeCertExpiring does.
const certWarnBefore = 14 * 24 * time.Hour

// certFindings names each node whose TLS certificate expires within
// certWarnBefore of now: from then on every new connection to it fails
// verification, Apollo's included, while the connections in use go on,
// so it shows only as connections are made again.
func certFindings(nodes []Node, now time.Time) []Finding {
	var out []Finding
	for _, n := range nodes {
		if n.CertExpiry == nil || n.CertExpiry.Sub(now) > certWarnBefore {
			continue
		}
		out = append(out, Finding{Severity: Warning, Code: "node_cert_expiring", Node: n.Addr, Message: fmt.Sprintf(
			"the TLS certificate this %s presents expires at %s, in %s: from then on every new connection to it fails verification, Apollo's included (connections in use go on); renew it",
			n.Role, n.CertExpiry.UTC().Format(time.RFC3339), n.CertExpiry.Sub(now).Round(time.Minute))})
	}
	return out
}
