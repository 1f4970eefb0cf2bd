package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ErrNoFirewall means a node cannot be isolated here: iptables is missing
// or may not be changed (it needs root, or CAP_NET_ADMIN).
var ErrNoFirewall = errors.New("isolating a node needs iptables and root (CAP_NET_ADMIN)")

// CheckFirewall reports whether Isolate can work on this machine.
func CheckFirewall(ctx context.Context) error {
	if _, err := iptables(ctx, "-L", "INPUT", "-n"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoFirewall, err)
	}
	return nil
}

// Isolate cuts n off from every other node of the cluster, both ways: a
// network partition with n alone on its side. Clients, which connect from
// 127.0.0.1, still reach it, so n goes on taking writes until it notices it
// is in the minority, while the others promote one of its replicas. It
// needs a cluster started with OwnAddrs; Rejoin (or Close) undoes it.
//
// The rules live in a chain of the cluster's own, hooked into INPUT (every
// loopback packet passes it) and named after this process, so that Close
// removes them and a later Isolate removes those of a process that died.
func (c *Cluster) Isolate(ctx context.Context, n *Node) error {
	return c.addRules(ctx, c.isolationRules(n))
}

// Rejoin removes the rules that Isolate(n) added.
func (c *Cluster) Rejoin(ctx context.Context, n *Node) error {
	return c.removeRules(ctx, c.isolationRules(n))
}

// addRules appends rules to the cluster's chain, all or none.
func (c *Cluster) addRules(ctx context.Context, rules [][]string) error {
	if !c.cfg.OwnAddrs {
		return errors.New("cutting nodes apart needs a cluster started with own addresses")
	}
	if err := c.ensureChain(ctx); err != nil {
		return err
	}
	for _, r := range rules {
		if _, err := iptables(ctx, append([]string{"-A", c.chain}, r...)...); err != nil {
			return errors.Join(err, c.removeRules(context.WithoutCancel(ctx), rules))
		}
	}
	return nil
}

// removeRules removes every copy of rules from the cluster's chain.
func (c *Cluster) removeRules(ctx context.Context, rules [][]string) error {
	c.mu.Lock()
	chain := c.chain
	c.mu.Unlock()
	if chain == "" {
		return nil
	}
	var errs []error
	for _, r := range rules {
		// Every copy (Isolate twice adds two). -C first: deleting a rule
		// that is not there is an error; -C exits 1 for "not there", and
		// anything else is a failure to report, not a rule gone.
		for {
			_, err := iptables(ctx, append([]string{"-C", chain}, r...)...)
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.ExitCode() == 1 {
				break
			}
			if err == nil {
				_, err = iptables(ctx, append([]string{"-D", chain}, r...)...)
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) isolationRules(n *Node) [][]string {
	var rules [][]string
	for _, m := range c.nodes {
		if m == n {
			continue
		}
		rules = append(rules,
			[]string{"-s", n.host(), "-d", m.host(), "-j", "DROP"},
			[]string{"-s", m.host(), "-d", n.host(), "-j", "DROP"})
	}
	return rules
}

// ensureChain creates and hooks the cluster's chain once, after removing
// the chains of processes that are gone.
func (c *Cluster) ensureChain(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.chain != "" {
		return nil
	}
	removeStaleChains(ctx)
	h := strings.Split(c.nodes[0].host(), ".")
	chain := fmt.Sprintf("%s%d-%s-%s", chainPrefix, os.Getpid(), h[1], h[2])
	if _, err := iptables(ctx, "-N", chain); err != nil {
		return err
	}
	if _, err := iptables(ctx, "-I", "INPUT", "1", "-j", chain); err != nil {
		_, _ = iptables(ctx, "-X", chain)
		return err
	}
	c.chain = chain
	return nil
}

const chainPrefix = "APOLLO-"

// removeChain unhooks, empties and deletes a chain of this package's.
func removeChain(ctx context.Context, chain string) error {
	for {
		if _, err := iptables(ctx, "-D", "INPUT", "-j", chain); err != nil {
			break // no hook left
		}
	}
	_, errF := iptables(ctx, "-F", chain)
	_, errX := iptables(ctx, "-X", chain)
	return errors.Join(errF, errX)
}

// removeStaleChains removes the chains left by a process of this package
// that died before its Close (the pid in the name is no longer alive).
func removeStaleChains(ctx context.Context) {
	out, err := iptables(ctx, "-S")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		name, ok := strings.CutPrefix(line, "-N "+chainPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(name, "-", 2)[0])
		if err == nil && pid != os.Getpid() && !ProcessAlive(pid) {
			_ = removeChain(ctx, chainPrefix+name)
		}
	}
}

func iptables(ctx context.Context, args ...string) (string, error) {
	bin, err := exec.LookPath("iptables")
	if err != nil {
		// Not on PATH for users other than root; where Debian puts it.
		if _, serr := os.Stat("/usr/sbin/iptables"); serr != nil {
			return "", err
		}
		bin = "/usr/sbin/iptables"
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"-w"}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
