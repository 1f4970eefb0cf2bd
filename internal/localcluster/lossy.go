package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Lossy drops a fraction of the packets between n and hosts (ClientHosts;
// every address, the other nodes' too, when none are given), both ways,
// each packet on its own chance: a link that loses packets, as a failing
// network card, cable or switch port does. Nothing is refused and nothing
// stops: TCP sends what was lost again, after at least 200 ms, and longer
// each time the same segment is lost again, so some requests take a few
// hundred milliseconds and a few take seconds, while the node answers
// PING most of the time. restore (or Close) removes the rules. This needs
// what Isolate needs (tc netem, the usual tool, is not available here).
func (c *Cluster) Lossy(ctx context.Context, n *Node, fraction float64, hosts ...string) (restore func(context.Context) error, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, fmt.Errorf("lossy: fraction %v out of (0, 1)", fraction)
	}
	for _, h := range hosts {
		if !c.ownsClientHost(h) {
			return nil, fmt.Errorf("%s is not one of the cluster's client addresses", h)
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

// Dropped is how many packets the cluster's firewall rules (Isolate,
// CutOff, Lossy) have dropped so far: 0 before any rule was made.
func (c *Cluster) Dropped(ctx context.Context) (int64, error) {
	c.mu.Lock()
	chain := c.chain
	c.mu.Unlock()
	if chain == "" {
		return 0, nil
	}
	out, err := iptables(ctx, "-L", chain, "-v", "-n", "-x")
	if err != nil {
		return 0, err
	}
	var sum int64
	// Two header lines, then one line a rule, its packet count first.
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if p, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			sum += p
		}
	}
	return sum, nil
}
