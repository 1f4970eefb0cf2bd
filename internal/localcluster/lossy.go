package localcluster

import (
	"context"
	"fmt"
	"strconv"
)

// Lossy drops a fraction of the packets between n and hosts (ClientHosts;
// every address, the other nodes' too, when none are given), both ways,
// each packet on its own chance: a link that loses packets, as a failing
// network card, cable or switch port does. Nothing is refused and nothing
// stops: TCP sends what was lost again, a request's or its answer's
// packet about 200 ms later at the earliest, and longer each time the same
// segment is lost again, so some requests take a few hundred milliseconds
// and a few take seconds, while the node answers PING most of the time.
// restore (or Close) removes the rules. It needs what Isolate needs; the
// loss is iptables' statistic match because tc netem, the usual tool, is
// not available here.
func (c *Cluster) Lossy(ctx context.Context, n *Node, fraction float64, hosts ...string) (restore func(context.Context) error, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, fmt.Errorf("lossy: fraction %v out of (0, 1)", fraction)
	}
	for _, h := range hosts {
		if err := c.checkClientHost(h); err != nil {
			return nil, err
		}
	}
	lose := []string{"-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(fraction, 'f', -1, 64), "-j", "DROP"}
	var rules [][]string
	if len(hosts) == 0 {
		rules = [][]string{append([]string{"-d", n.host()}, lose...), append([]string{"-s", n.host()}, lose...)}
	}
	for _, h := range hosts {
		rules = append(rules,
			append([]string{"-s", h, "-d", n.host()}, lose...),
			append([]string{"-s", n.host(), "-d", h}, lose...))
	}
	restore = func(ctx context.Context) error { return c.removeRules(ctx, rules) }
	return restore, c.addRules(ctx, rules)
}
