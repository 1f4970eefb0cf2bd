package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
)

// FaultNames lists the faults the nemesis knows, in the order a run
// without --faults injects them.
func FaultNames() []string {
	return []string{"replica-crash", "replica-hang", "primary-crash", "primary-hang", "primary-full", "primary-disk", "switchover", "forced-switchover", "handshake", "busy-script", "instance-kill",
		"instance-pause", "instance-clock", "primary-partition", "reshard", "cluster-restart", "replica-resync", "primary-slow", "replica-slow", "conn-kill", "primary-pause-writes", "primary-restart", "maxclients", "instance-partition", "instance-primary-partition", "instance-replica-partition", "slot-migration-stuck", "primary-lossy", "replica-lossy", "instance-primary-oneway", "instance-lossy", "password-rotation", "rights-revoked", "instance-log-stall"}
}

// slowStop and slowRun are the slow faults' pulses: the node is stopped
// for slowStop of every slowStop+slowRun, far below the cluster's node
// timeout, so it is never failed over: a grey node, slow to everyone and
// replaced by no one. A pause is longer than the router's stall bound, so
// requests to it time out while it still takes, later, what they sent.
const slowStop, slowRun = 500 * time.Millisecond, 150 * time.Millisecond

// connKillEvery is how often conn-kill closes a node's client connections.
const connKillEvery = 200 * time.Millisecond

// instanceClockOff is how far off the instance-clock fault sets an
// instance's clock: beyond the reservation TTL and the slack of G4 and G5,
// so that an instance keeping its own time could not hide it.
const instanceClockOff = 8 * time.Second

// ParseFaults parses a comma-separated fault list ("all" for every one,
// "random" for faults drawn from the seed: fault_random.go), where "a+b"
// is two faults together (fault_joint.go).
func ParseFaults(s string) ([]string, error) {
	if s == "" || s == "all" {
		return FaultNames(), nil
	}
	if s == RandomFaults {
		return []string{RandomFaults}, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if strings.Contains(f, "+") {
			joint, err := parseJoint(f)
			if err != nil {
				return nil, err
			}
			f = joint
		} else if !slices.Contains(FaultNames(), f) {
			return nil, fmt.Errorf("unknown fault %q (want some of %s, or all, or random alone)", f, strings.Join(FaultNames(), ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// nemesis injects the faults of a schedule, one at a time, each on
// targets chosen at random when it is injected, and records every action.
type nemesis struct {
	c         *localcluster.Cluster
	creds     *drill.Credentials // the instances' Redis user
	instances []*Instance
	faults    []string
	every     time.Duration // time between the end of one fault and the next
	hold      time.Duration // how long each fault lasts
	rng       *rand.Rand
	start     time.Time
	events    []FaultEvent
	say       func(string) // a progress line per action; nil: none
}

// effecter is a fault that measures what it did to the data.
type effecter interface{ Effect() string }

// record records an action on f, begun at at (since the run's start).
func (n *nemesis) record(kind string, f drill.Fault, action string, at time.Duration, err error) {
	ev := FaultEvent{Kind: kind, Fault: f.Name(), Action: action, At: at.Nanoseconds()}
	if err != nil {
		ev.Err = err.Error()
	}
	if e, ok := f.(effecter); ok && action == "heal" {
		ev.Effect = e.Effect()
	}
	n.add(ev)
}

// add records ev and tells of it on the run's progress output.
func (n *nemesis) add(ev FaultEvent) {
	n.events = append(n.events, ev)
	if n.say == nil {
		return
	}
	line := fmt.Sprintf("%s: %s %s", time.Duration(ev.At).Round(time.Second), ev.Action, ev.Fault)
	switch {
	case ev.Err != "":
		line += " failed: " + ev.Err
	case ev.Effect != "":
		line += ": " + ev.Effect
	}
	n.say(line)
}

// healWithin bounds the healing of one fault (each of a pair's).
const healWithin = 60 * time.Second

// run injects faults until ctx ends, healing each before the next and the
// last one before it returns (with a context of its own: healing must
// happen even when the run is over).
func (n *nemesis) run(ctx context.Context) {
	for i := 0; ; i++ {
		if !sleep(ctx, n.every) {
			return
		}
		kind := n.faults[i%len(n.faults)]
		if kind == RandomFaults {
			kind = drawFault(n.rng)
		}
		f, err := n.fault(ctx, kind)
		if err != nil {
			n.add(FaultEvent{Kind: kind, Fault: kind, Action: "inject", At: time.Since(n.start).Nanoseconds(), Err: err.Error()})
			continue
		}
		// An inject is stamped when it begins: one that takes a while (a
		// restart) is part of the fault. A heal, when it is done.
		at := time.Since(n.start)
		n.record(kind, f, "inject", at, f.Inject(ctx))
		sleep(ctx, n.hold)
		hctx, cancel := context.WithTimeout(context.Background(), healWithin)
		err = f.Heal(hctx)
		n.record(kind, f, "heal", time.Since(n.start), err)
		cancel()
	}
}

func (n *nemesis) pick(nodes []*localcluster.Node) *localcluster.Node {
	return nodes[n.rng.IntN(len(nodes))]
}

// fault builds the named fault on targets chosen now: a shard at random,
// as the cluster sees it (after a failover its primary is another node).
func (n *nemesis) fault(ctx context.Context, name string) (drill.Fault, error) {
	if a, b, ok := strings.Cut(name, "+"); ok {
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		fa, err := n.fault(ctx, a)
		if err != nil {
			return nil, err
		}
		fb, err := n.fault(ctx, b)
		if err != nil {
			return nil, err
		}
		return &jointFault{parts: []drill.Fault{fa, fb}}, nil
	}
	shard := n.rng.IntN(n.c.Config().Primaries)
	switch name {
	case "instance-kill":
		in := n.instances[n.rng.IntN(len(n.instances))]
		return drill.FaultFunc{Label: "instance kill (SIGKILL) " + in.Name,
			InjectFn: func(context.Context) error { return in.Kill() },
			HealFn:   func(ctx context.Context) error { return in.Start(ctx) }}, nil
	case "instance-pause":
		in := n.instances[n.rng.IntN(len(n.instances))]
		return drill.FaultFunc{Label: "instance pause (SIGSTOP, then SIGCONT) " + in.Name,
			InjectFn: func(context.Context) error { return in.Pause() },
			HealFn:   func(context.Context) error { return in.Resume() }}, nil
	case "instance-log-stall":
		// As a log collector that stopped, or a container runtime whose
		// log buffer is full: nobody reads the instance's stderr.
		in := n.instances[n.rng.IntN(len(n.instances))]
		return drill.FaultFunc{Label: "instance log output not read (stderr pipe full) " + in.Name,
			InjectFn: func(context.Context) error { return in.StallLog() },
			HealFn:   func(context.Context) error { return in.ResumeLog() }}, nil
	case "instance-clock":
		in := n.instances[n.rng.IntN(len(n.instances))]
		off := instanceClockOff
		if n.rng.IntN(2) == 0 {
			off = -off
		}
		return drill.FaultFunc{Label: fmt.Sprintf("instance clock off by %s (restarted with --clock-offset) %s", off, in.Name),
			InjectFn: func(ctx context.Context) error { return in.Restart(ctx, "--clock-offset", off.String()) },
			HealFn:   func(ctx context.Context) error { return in.Restart(ctx) }}, nil
	case "instance-partition":
		return &cutOffFault{c: n.c, in: n.instances[n.rng.IntN(len(n.instances))]}, nil
	case "instance-lossy":
		return &lossyInstanceFault{c: n.c, in: n.instances[n.rng.IntN(len(n.instances))]}, nil
	case "cluster-restart":
		return &restartFault{c: n.c}, nil
	case "password-rotation":
		return drill.Rotation(n.creds), nil
	case "reshard":
		return n.reshard(ctx)
	case "slot-migration-stuck":
		return n.openMigration(ctx)
	}
	primary, replicas := n.c.Primary(ctx, shard), n.c.Replicas(ctx, shard)
	if primary == nil || len(replicas) == 0 {
		return nil, fmt.Errorf("shard %d has no primary or no replica to fault", shard)
	}
	switch name {
	case "replica-crash":
		return drill.Crash(n.c, n.pick(replicas), "replica"), nil
	case "replica-resync":
		return n.resync(n.pick(replicas), primary), nil
	case "replica-hang":
		return drill.Hang(n.c, "replica "+replicas[0].Addr, replicas[0]), nil
	case "replica-slow":
		return drill.Slow(n.c, n.pick(replicas), "replica", slowStop, slowRun), nil
	case "primary-slow":
		return drill.Slow(n.c, primary, "primary", slowStop, slowRun), nil
	case "replica-lossy":
		return drill.Lossy(n.c, n.pick(replicas), "replica", drill.LossyFraction), nil
	case "primary-lossy":
		return drill.Lossy(n.c, primary, "primary", drill.LossyFraction), nil
	case "conn-kill":
		// Every request in flight to the node loses its answer, over and
		// over: writes of unknown outcome, connections made again.
		return drill.KillConnections(n.c, n.pick(append(replicas, primary)), "node", connKillEvery), nil
	case "primary-pause-writes":
		return drill.PauseWrites(n.c, primary, "primary", n.hold+30*time.Second), nil
	case "primary-crash":
		return n.failover(primary, replicas), nil
	case "primary-restart":
		return &restartFault{c: n.c, node: primary}, nil
	case "primary-hang":
		return drill.Hang(n.c, "primary "+primary.Addr, primary), nil
	case "primary-full":
		return n.full(primary), nil
	case "primary-disk":
		// As a full disk does: its snapshot fails, and it refuses every
		// write, and PING, with MISCONF, while it serves plain reads
		// (confirmed reads fail: their fence is a write). Healing takes a
		// snapshot that succeeds, which ends the refusals.
		return drill.FaultFunc{Label: "primary cannot persist (snapshot failed, MISCONF) " + primary.Addr,
			InjectFn: primary.FailPersistence, HealFn: primary.RestorePersistence}, nil
	case "switchover", "forced-switchover":
		return n.switchover(primary, n.pick(replicas), name == "forced-switchover"), nil
	case "handshake":
		return n.handshake(n.pick(append(replicas, primary))), nil
	case "rights-revoked":
		return n.revokeInfo(n.pick(append(replicas, primary))), nil
	case "busy-script":
		// As another application's slow script does: the node answers
		// every command with BUSY, while it stays up and in the cluster.
		// Healing kills the script.
		node := n.pick(append(replicas, primary))
		return drill.FaultFunc{Label: "node busy with a script (BUSY) " + node.Addr, InjectFn: node.Busy, HealFn: node.Unbusy}, nil
	case "maxclients":
		// As another application's connections do: the node greets every
		// new connection with its refusal and closes it, and serves those
		// in use; its idle ones are closed, so Apollo must make new ones.
		node := n.pick(append(replicas, primary))
		return drill.FaultFunc{Label: "node full at maxclients (new connections refused) " + node.Addr,
			InjectFn: node.FillClients, HealFn: node.UnfillClients}, nil
	case "instance-primary-partition":
		return &cutOffFault{c: n.c, in: n.instances[n.rng.IntN(len(n.instances))], node: primary, role: "primary"}, nil
	case "instance-primary-oneway":
		return &cutOffFault{c: n.c, in: n.instances[n.rng.IntN(len(n.instances))], node: primary, role: "primary", answersOnly: true}, nil
	case "instance-replica-partition":
		return &cutOffFault{c: n.c, in: n.instances[n.rng.IntN(len(n.instances))], node: n.pick(replicas), role: "replica"}, nil
	case "primary-partition":
		return &partitionFault{c: n.c, n: n, primary: primary, replicas: replicas}, nil
	}
	return nil, fmt.Errorf("unknown fault %q", name)
}

// resync crashes a replica during a burst of writes, more than its
// primary's backlog holds, and restarts it when it heals: the replica comes
// back with data as old as the fault is long and needs a full sync, which
// its primary delays by Redis's default 5 s, while it answers reads with
// what it has. Healing waits for the cluster to be whole (the sync done),
// then puts the primary's settings back.
func (n *nemesis) resync(replica, primary *localcluster.Node) drill.Fault {
	undo := func(context.Context) error { return nil }
	return drill.FaultFunc{Label: "replica crashed behind, restarted needing a full sync " + replica.Addr,
		InjectFn: func(ctx context.Context) (err error) {
			undo, err = replica.FallBehind(ctx, primary)
			return err
		},
		HealFn: func(ctx context.Context) error {
			return errors.Join(replica.Restart(ctx), n.c.WaitHealthy(ctx), undo(ctx))
		},
	}
}

// handshake makes one node refuse Apollo's new connections (a password
// Apollo does not know, as in a half-done rotation) and drops the
// connections it has, so every connection Apollo makes must fail its
// handshake.
func (n *nemesis) handshake(node *localcluster.Node) drill.Fault {
	undo := func(context.Context) error { return nil }
	return drill.FaultFunc{Label: "handshake refused on " + node.Addr,
		InjectFn: func(ctx context.Context) error {
			u, err := n.creds.RefuseOn(ctx, node)
			if u != nil {
				undo = u // also when it failed half way: healing puts the password back
			}
			return err
		},
		HealFn: func(ctx context.Context) error { return errors.Join(undo(ctx), n.c.WaitHealthy(ctx)) },
	}
}

// revokedLabel begins rights-revoked's label, before the node's address
// (RightsMissing finds the node in it).
const revokedLabel = "INFO denied to Apollo's user on "

// revokeInfo takes INFO from Apollo's user on one node, as an ACL narrowed
// the usual way (-@dangerous) on some nodes while Apollo runs: the proofs
// of the shard's acknowledged writes cannot read that node's replication
// offsets, so they are not confirmed (a primary's: none is), and nothing
// unconfirmed may be reported done. Connections in use are kept: Redis
// checks the rights of each command.
func (n *nemesis) revokeInfo(node *localcluster.Node) drill.Fault {
	undo := func(context.Context) error { return nil }
	return drill.FaultFunc{Label: revokedLabel + node.Addr,
		InjectFn: func(ctx context.Context) error {
			u, err := n.creds.DenyOn(ctx, node, "info")
			undo = u
			return err
		},
		HealFn: func(ctx context.Context) error { return undo(ctx) },
	}
}

// failover kills a primary and, to heal, waits until one of its replicas
// has been promoted before restarting it. primary-restart is the other
// case: restarted at once, still the shard's primary, it keeps what its
// persistence kept, and without persistence its replicas copy an empty
// data set — a whole shard lost, not a fault Apollo can survive.
func (n *nemesis) failover(primary *localcluster.Node, replicas []*localcluster.Node) drill.Fault {
	return drill.FaultFunc{Label: "primary crash (SIGKILL) with failover " + primary.Addr,
		InjectFn: func(context.Context) error { return primary.Kill() },
		HealFn: func(ctx context.Context) error {
			if err := n.waitPromoted(ctx, replicas); err != nil {
				return err
			}
			return errors.Join(primary.Restart(ctx), n.c.WaitHealthy(ctx))
		},
	}
}

// waitPromoted waits until one of replicas is a primary.
func (n *nemesis) waitPromoted(ctx context.Context, replicas []*localcluster.Node) error {
	for ctx.Err() == nil {
		for _, r := range replicas {
			rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err := n.c.WaitRole(rctx, r, "primary")
			cancel()
			if err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("no replica was promoted: %w", ctx.Err())
}

// reshardSlots is how many slots one reshard moves: enough that keys of
// every kind move while the workload uses them, few enough that the move
// ends well within the nemesis's time to heal.
const reshardSlots = 1000

// byAddr is the primaries of SlotCounts in the order of their addresses:
// map order is random, and the run's seed, not it, must pick among them.
func byAddr(counts map[*localcluster.Node]int) []*localcluster.Node {
	out := make([]*localcluster.Node, 0, len(counts))
	for node := range counts {
		out = append(out, node)
	}
	slices.SortFunc(out, func(a, b *localcluster.Node) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}

// openMigration leaves the slot with the most keys of a primary chosen at
// random half moved to another, for the fault's length, as a reshard that
// was interrupted does: Apollo meets ASK for the keys moved and created
// since, and TRYAGAIN for a script whose keys are on both sides. Healing
// finishes the move, as redis-cli --cluster fix would.
func (n *nemesis) openMigration(ctx context.Context) (drill.Fault, error) {
	counts, err := n.c.SlotCounts(ctx)
	if err != nil {
		return nil, err
	}
	primaries := byAddr(counts)
	if len(primaries) < 2 {
		return nil, fmt.Errorf("a migration needs two primaries, the cluster has %d", len(primaries))
	}
	from := n.pick(primaries)
	to := n.pick(slices.DeleteFunc(slices.Clone(primaries), func(p *localcluster.Node) bool { return p == from }))
	var finish func(context.Context) error
	return drill.FaultFunc{Label: fmt.Sprintf("slot migration left open, half its keys moved, from %s to %s", from.Addr, to.Addr),
		InjectFn: func(ctx context.Context) error {
			_, f, err := n.c.OpenMigration(ctx, from, to)
			finish = f
			return err
		},
		HealFn: func(ctx context.Context) error {
			if finish == nil {
				return nil
			}
			return errors.Join(finish(ctx), n.c.WaitHealthy(ctx))
		}}, nil
}

// reshard moves slots from the primary that serves the most to another
// chosen at random. Taking from the largest means no run of reshards ever
// empties a shard: a primary left with no slot would turn into a replica of
// the node that took its last one, and the cluster would never look as it
// did again.
func (n *nemesis) reshard(ctx context.Context) (drill.Fault, error) {
	counts, err := n.c.SlotCounts(ctx)
	if err != nil {
		return nil, err
	}
	primaries := byAddr(counts)
	if len(primaries) < 2 {
		return nil, fmt.Errorf("resharding needs two primaries, the cluster has %d", len(primaries))
	}
	slices.SortStableFunc(primaries, func(a, b *localcluster.Node) int { return counts[b] - counts[a] })
	from := primaries[0]
	if counts[from] < reshardSlots {
		return nil, fmt.Errorf("the largest shard serves %d slots, fewer than the %d to move", counts[from], reshardSlots)
	}
	return drill.ReshardBetween(n.c, from, n.pick(primaries[1:]), reshardSlots), nil
}
