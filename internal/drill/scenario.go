package drill

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// Scenario names a failure to drill.
type Scenario string

// Scenarios.
const (
	ReplicaCrash Scenario = "replica-crash" // the 2019 incident
	ReplicaHang  Scenario = "replica-hang"  // SIGSTOP for longer than the node timeout
	ReplicaBusy  Scenario = "replica-busy"  // a script that never ends: BUSY to every command
	// ReplicaResync: a replica that crashed during more writes than its
	// primary's backlog holds restarts with its old data, 5 s from a full sync.
	ReplicaResync Scenario = "replica-resync"
	PrimaryCrash  Scenario = "primary-crash" // failover
	SlowReplica   Scenario = "slow-replica"  // latency on one replica
	ReshardSlots  Scenario = "reshard"       // 1000 slots moved under load
	FullOutage    Scenario = "full-outage"   // every node hangs, then resumes
	// ReplicaCutOff: the path between the drill's clients and a replica is
	// cut (iptables, every packet dropped both ways) while the cluster sees
	// nothing wrong and keeps offering the replica: the 2019 incident as
	// one host's route or firewall rule brings it about.
	ReplicaCutOff Scenario = "replica-cutoff"
	// ReplicaLossy: the path between the drill's clients and a replica
	// loses a share of its packets (iptables, each packet on its own
	// chance, both ways): a failing card, cable or switch port. Nothing
	// fails outright; TCP sends again what was lost (a request's or its
	// answer's packet about 200 ms later at the earliest), and some calls
	// take seconds. The cluster sees nothing.
	ReplicaLossy Scenario = "replica-lossy"
	// PasswordRotation: the clients' Redis password is rotated in the
	// harshest order, within milliseconds (Credentials.Rotate): the new
	// one added on every node, the password file rewritten, the old one
	// removed and every connection of the clients' user killed. A client
	// that read its password once can make no connection after it.
	PasswordRotation Scenario = "password-rotation"
)

// LossyFraction is the share of packets a lossy node drops (ReplicaLossy,
// verify's lossy faults): enough that about one request in ten to it
// waits for TCP to send something again, and a few wait seconds, while it
// answers PING and stays in the cluster.
const LossyFraction = 0.05

// Scenarios lists every scenario.
func Scenarios() []Scenario {
	return []Scenario{ReplicaCrash, ReplicaHang, ReplicaBusy, ReplicaResync, PrimaryCrash, SlowReplica, ReshardSlots, FullOutage, ReplicaCutOff, ReplicaLossy, PasswordRotation}
}

// ParseScenario parses a scenario name.
func ParseScenario(s string) (Scenario, error) {
	for _, sc := range Scenarios() {
		if string(sc) == s {
			return sc, nil
		}
	}
	names := make([]string, 0, len(Scenarios()))
	for _, sc := range Scenarios() {
		names = append(names, string(sc))
	}
	return "", fmt.Errorf("unknown scenario %q (want one of %s)", s, strings.Join(names, ", "))
}

// Fault builds the scenario's fault on a local cluster. Replica faults hit
// a replica of shard 0; every read policy in the drill reads from it.
// creds are the clients' Redis user when the scenario needs one
// (needsUser), nil otherwise.
func (s Scenario) Fault(ctx context.Context, c *localcluster.Cluster, creds *Credentials) (Fault, error) {
	replicas := c.Replicas(ctx, 0)
	primary := c.Primary(ctx, 0)
	if len(replicas) == 0 || primary == nil {
		return nil, fmt.Errorf("scenario %s needs shard 0 with a primary and a replica", s)
	}
	switch s {
	case ReplicaCrash:
		return Crash(c, replicas[0], "replica"), nil
	case ReplicaHang:
		return Hang(c, "replica", replicas[0]), nil
	case ReplicaBusy:
		return FaultFunc{Label: "replica busy with a script (BUSY) " + replicas[0].Addr, InjectFn: replicas[0].Busy, HealFn: replicas[0].Unbusy}, nil
	case ReplicaResync:
		return resync(c, replicas[0], primary), nil
	case PrimaryCrash:
		return Crash(c, primary, "primary"), nil
	case SlowReplica:
		return Slow(c, replicas[0], "replica", 40*time.Millisecond, 60*time.Millisecond), nil
	case ReshardSlots:
		return Reshard(c, 1000), nil
	case FullOutage:
		return Hang(c, "full outage:", c.Nodes()...), nil
	case ReplicaCutOff:
		host, err := s.clientsHost(c)
		if err != nil {
			return nil, err
		}
		return cutOff(c, host.String(), replicas[0]), nil
	case ReplicaLossy:
		host, err := s.clientsHost(c)
		if err != nil {
			return nil, err
		}
		return Lossy(c, replicas[0], "replica", LossyFraction, host.String()), nil
	case PasswordRotation:
		if creds == nil {
			return nil, fmt.Errorf("scenario %s needs the clients' Redis user", s)
		}
		return Rotation(creds), nil
	}
	return nil, fmt.Errorf("unknown scenario %q", s)
}

// needsUser reports whether the drill's clients connect as a Redis user of
// their own with a password file (NewCredentials), for a fault on it.
func (s Scenario) needsUser() bool { return s == PasswordRotation }

// onClientsPath reports whether the fault is on the path between the
// drill's clients and a node (a firewall rule naming their address), not
// on the node: such a scenario needs iptables, and a cluster whose nodes
// and clients have addresses of their own.
func (s Scenario) onClientsPath() bool { return s == ReplicaCutOff || s == ReplicaLossy }

// clientsHost is the local address the drill's clients connect from when
// the fault is on their path; the zero Addr otherwise.
func (s Scenario) clientsHost(c *localcluster.Cluster) (netip.Addr, error) {
	if !s.onClientsPath() {
		return netip.Addr{}, nil
	}
	host, err := c.ClientHost(0)
	if err != nil {
		return netip.Addr{}, err
	}
	return netip.ParseAddr(host)
}

// cutOff drops every packet between the drill's clients (host) and n,
// both ways; healing lets them through again.
func cutOff(c *localcluster.Cluster, host string, n *localcluster.Node) Fault {
	reconnect := func(context.Context) error { return nil }
	return FaultFunc{Label: fmt.Sprintf("replica cut off from the clients (%s dropped both ways) %s", host, n.Addr),
		InjectFn: func(ctx context.Context) error {
			r, err := c.CutOff(ctx, host, n)
			if err == nil {
				reconnect = r
			}
			return err
		},
		HealFn: func(ctx context.Context) error { return reconnect(ctx) },
	}
}

// resync kills replica, writes past its primary's backlog and restarts it
// at once: it answers PING and reads with its old data (the drill's drivers
// were seeded after its last full sync: none of them) until its primary
// sends the data set, 5 s later. Healing waits for the cluster to be whole,
// then puts the primary's settings back.
func resync(c *localcluster.Cluster, replica, primary *localcluster.Node) Fault {
	undo := func(context.Context) error { return nil }
	return FaultFunc{Label: "replica restarted behind its primary (a full sync 5 s away) " + replica.Addr,
		InjectFn: func(ctx context.Context) error {
			u, err := replica.FallBehind(ctx, primary)
			undo = u
			return errors.Join(err, replica.Restart(ctx))
		},
		HealFn: func(ctx context.Context) error { return errors.Join(c.WaitHealthy(ctx), undo(ctx)) },
	}
}
