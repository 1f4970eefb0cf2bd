package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// clientHostBase is the last byte of ClientHost(0): nodes take .1 up.
const clientHostBase = 200

// ClientHost is the i-th (0 to 49) loopback address of the cluster's own
// 127.A.B.0/24 kept for clients, so that CutOff can cut one client off:
// one that connects from it (an Apollo instance with --redis-source-addr).
// It needs a cluster started with OwnAddrs.
func (c *Cluster) ClientHost(i int) (string, error) {
	if !c.cfg.OwnAddrs {
		return "", errors.New("client addresses need a cluster started with own addresses")
	}
	if i < 0 || i >= 50 {
		return "", fmt.Errorf("client address %d out of 0–49", i)
	}
	h := c.nodes[0].host()
	return fmt.Sprintf("%s.%d", h[:strings.LastIndexByte(h, '.')], clientHostBase+i), nil
}

// CutOff drops every packet between host (a ClientHost) and nodes (every
// node when none are given), both ways: a client cut off from the cluster,
// or from part of it, as a host that lost its network path to Redis is,
// while the nodes still reach one another and every other client. Nothing
// is refused: what the client sends, and what was on its way to it, is
// lost, and TCP sends it again once reconnect removes the rules (Close
// removes them too).
func (c *Cluster) CutOff(ctx context.Context, host string, nodes ...*Node) (reconnect func(context.Context) error, err error) {
	return c.cut(ctx, host, true, nodes)
}

// CutAnswers drops every packet from nodes (every node when none are
// given) to host, and none the other way: a path that fails one way, as
// an asymmetric route or a one-sided firewall rule does. What the client
// sends arrives and runs (TCP's acknowledgements are lost, so it sends
// again, and the node drops the copies); no answer comes back, and no new
// connection is made (the node's SYN-ACK is lost). A write so cut was done
// and its client cannot know.
func (c *Cluster) CutAnswers(ctx context.Context, host string, nodes ...*Node) (reconnect func(context.Context) error, err error) {
	return c.cut(ctx, host, false, nodes)
}

// cut drops the packets from nodes to host, and from host to nodes too
// when both. A rule is the same whichever cut made it, and reconnect
// removes every copy: undoing a CutAnswers undoes half of a CutOff of the
// same host and node made meanwhile. Callers cut one way at a time.
func (c *Cluster) cut(ctx context.Context, host string, both bool, nodes []*Node) (reconnect func(context.Context) error, err error) {
	if err := c.checkClientHost(host); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		nodes = c.nodes
	}
	var rules [][]string
	for _, n := range nodes {
		rules = append(rules, []string{"-s", n.host(), "-d", host, "-j", "DROP"})
		if both {
			rules = append(rules, []string{"-s", host, "-d", n.host(), "-j", "DROP"})
		}
	}
	reconnect = func(ctx context.Context) error { return c.removeRules(ctx, rules) }
	return reconnect, c.addRules(ctx, rules)
}

// checkClientHost refuses a host that is not one of ClientHost's: rules
// are only ever made for addresses of the cluster's own.
func (c *Cluster) checkClientHost(host string) error {
	for i := range 50 {
		if h, err := c.ClientHost(i); err == nil && h == host {
			return nil
		}
	}
	return fmt.Errorf("%s is not one of the cluster's client addresses", host)
}
