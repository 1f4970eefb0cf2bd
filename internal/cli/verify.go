package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/verify"
)

const verifySynopsis = `verify [--duration 1m] [--instances 2] [--faults all] [--apollo-bin PATH] [--json FILE]

Check Apollo's guarantees from a recorded history, under a nemesis. A fresh
local 3 × 2 Redis Cluster and --instances 'apollo serve' processes of
--apollo-bin (this binary by default: point it at an older build to check
that build) share the work; riders and drivers act only through the public
HTTP API, round-robin over the instances; every operation is recorded with
its outcome (ok, failed, or unknown when it may or may not have happened);
the nemesis injects --faults one at a time. Then the instances settle, the
final state is read from the primaries, and the history is checked: each
booking's lifecycle and each driver's reservation register with porcupine
(linearizability), and audits — every booking answered 201 still exists,
no driver held by two open bookings, no reservation without its booking
past its end plus the slack (at the end, and in every driver read once
Redis could be written for the slack), no booking open past its deadline
plus the slack (at the end, and in every booking read the same way), no
deadline that moves once a create was answered and no reservation longer
than its TTL, the same Spampede rules on every instance, no 500, and every
booking created, by the time its instance recorded, while a request that
could create it ran (within 0.5 s: instances keep the cluster's time).

Faults: replica-crash, replica-resync (a replica down during more writes than
its primary's backlog holds, restarted: its old data until a full sync 5 s
away),
replica-hang, primary-crash (heals after a replica is
promoted), primary-restart (a primary killed and restarted at once, as a
supervisor does, within the node timeout: still the primary, it keeps what
--persistence kept, and its replicas copy it), primary-hang, primary-full (a primary at its maxmemory refuses
writes, OOM), primary-disk (a primary whose snapshot failed, as on a full
disk, refuses writes, MISCONF), switchover (CLUSTER FAILOVER on a replica while its primary
is up, as an upgrade does), forced-switchover (CLUSTER FAILOVER FORCE: the
replica takes over without its primary's agreement and drops every write it
had not received; Apollo's write proof keeps a write from being reported done
until every replica in step holds it), handshake (one node refuses the password of Apollo's user),
rights-revoked (one node's ACL denies Apollo's user INFO, as -@dangerous does,
while Apollo runs: no acknowledged write of its shard can be proven),
busy-script (one node runs a script that never ends and answers BUSY to everything),
instance-kill (SIGKILL of one apollo instance, restarted), instance-pause
(SIGSTOP of one apollo instance for the fault's length, then SIGCONT: it
wakes holding leases and claims that have run out), instance-clock (one
apollo instance restarted with its clock 8 s ahead or behind,
--clock-offset, then restarted right: the clock_off check finds an
instance that does not keep the cluster's time), primary-partition
(a primary cut off from the other nodes by iptables while Apollo still
reaches it, until a replica is promoted: needs iptables and root),
instance-partition (one apollo instance cut off from every Redis node by
iptables, both ways, while its clients still reach it: each instance
connects from an address of its own, --redis-source-addr; needs iptables
and root), instance-primary-partition (the same between one apollo instance
and one primary only: the cluster and the other instances see nothing
wrong), instance-replica-partition (the same with one replica: the 2019
incident from one instance's side, as the cluster keeps offering it),
instance-primary-oneway (one primary's packets to one apollo instance
dropped, not the instance's to it: its commands arrive and run, their
answers never come, as an asymmetric route does; every write it sends is
done and of unknown outcome to it), instance-lossy (one apollo instance's
path to every Redis node loses 5 % of its packets, both ways, as its own
failing card does: every node is slow to it now and then, and to no one
else), instance-log-stall (nobody reads one apollo instance's stderr, as a
stopped log collector or a full container log buffer: its pipe shrunk to a
page and not read for the fault's length; an instance that waited for its
log output answered nothing meanwhile),
slot-migration-stuck (the slot with the most keys of one primary left
half moved to another, MIGRATING and IMPORTING, as an interrupted reshard
leaves it, until healing finishes the move),
reshard (redis-cli moves 1000 slots and their keys from the primary serving
the most to another, under the workload: needs redis-cli), cluster-restart
(every node killed and restarted from its data directory: what survives is
--persistence's), primary-slow, replica-slow (the node stopped 500 ms of
every 650 ms, SIGSTOP and SIGCONT, never long enough to be failed over: a
grey node that takes, late, what it was sent), primary-lossy, replica-lossy
(5 % of the node's packets lost, to and from every address, each on its own
chance, by iptables: a failing card or switch port; TCP sends again what was
lost, a request's or its answer's packet about 200 ms later at the earliest,
so some requests take seconds; needs iptables and root), conn-kill (every client
connection of one node closed every 200 ms, CLIENT KILL: requests in flight
lose their answers), primary-pause-writes (CLIENT PAUSE WRITE on a primary for
the fault's length, as a manual failover does: reads go on, writes wait),
maxclients (one node full, as another application's connections make it: each
new connection is greeted with its refusal and closed, those in use are
served, the idle ones closed), password-rotation (the Redis password of the
instances' ACL user rotated in the harshest order, within milliseconds: the
new one added on every node, --redis-password-file rewritten, the old one
removed and every connection of the user killed, so that every command after
it needs a new connection; the instances run as that user, the harness as
the default one), or all. Two faults joined by + happen together, one an instance's and one the
cluster's, e.g. instance-kill+forced-switchover (an instance killed while a
replica is forced over): injected in that order, healed in the reverse. --faults random draws
each fault from the seed instead: any of them, one in three an instance's
together with the cluster's, so that a long run meets orders and pairs
nobody listed, and the same seed draws them again. Each node has a loopback address
of its own (127.A.B.n), so that a partition can be made between them.
A failing partition's porcupine view is written as HTML next to the report.
Exit code: 0 every check passed, 3 a violation, 4 a check undecided (and
none failed), 1 the run could not be made, 2 a usage error.
--check FILE checks a history written by --json before, without a run.`

func runVerify(ctx context.Context, e env, args []string) error {
	cfg := verify.DefaultConfig()
	fs := newFlagSet(e, "verify", verifySynopsis)
	self, _ := os.Executable()
	fs.StringVar(&cfg.Bin, "apollo-bin", self, "the apollo binary whose serve is checked")
	fs.IntVar(&cfg.Instances, "instances", cfg.Instances, "apollo serve processes sharing the cluster")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long the workload and the nemesis run")
	faults := fs.String("faults", "all", "comma-separated faults to inject in turn, all, random (drawn from --seed: any fault, one in three an instance's with the cluster's), or none")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", cfg.FaultEvery, "calm between two faults")
	fs.DurationVar(&cfg.FaultFor, "fault-for", cfg.FaultFor, "how long each fault lasts")
	fs.IntVar(&cfg.Drivers, "drivers", cfg.Drivers, "drivers in the workload (all near one pickup, so bookings compete)")
	fs.IntVar(&cfg.Riders, "riders", cfg.Riders, "riders in the workload")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload's and the nemesis's choices")
	fs.Func("redis-conf", `a redis.conf line added to every node, e.g. "min-replicas-to-write 1" (repeatable)`, func(v string) error {
		cfg.RedisConf = append(cfg.RedisConf, v)
		return nil
	})
	fs.Func("serve-flag", `a flag added to every instance's apollo serve, after verify's own, e.g. --serve-flag=--booking-acks=2 (repeatable; recorded in --json). One that overrides a flag verify sets (addresses, timeouts, the reservation TTL) changes what the checks assume`, func(v string) error {
		if !strings.HasPrefix(v, "-") {
			return fmt.Errorf("%q is not a flag: give it with its dashes, e.g. --serve-flag=--booking-acks=2", v)
		}
		cfg.ServeFlags = append(cfg.ServeFlags, v)
		return nil
	})
	fs.BoolVar(&cfg.Balancer, "balancer", cfg.Balancer, "model the load balancer in front of the instances: a request whose connection an instance refused (killed, restarting) goes to the next one, and an instance that misses two health checks (/readyz, every 250 ms) gets no new request until it answers one; false: each request goes to its own instance only")
	fs.Var(&cfg.Persistence, "persistence", "what the nodes keep on disk: none, rdb, aof (everysec) or aof-always; cluster-restart loses the rest")
	dir := fs.String("dir", "", "directory for the cluster, instance logs and report files (default: a new temporary directory, kept when a check fails)")
	jsonOut := fs.String("json", "", "write the run (history, faults, final state, report) as JSON to this file")
	checkOnly := fs.String("check", "", "check a history written by --json instead of running one")
	var opts verify.Options
	fs.DurationVar(&opts.PartitionTimeout, "partition-timeout", 5*time.Minute, "how long porcupine may take on one booking or driver before its verdict is unknown")
	fs.DurationVar(&opts.DriverReadLag, "driver-read-lag", verify.DefaultDriverReadLag, "how stale a driver read from a replica may be (the router's --redis-max-replica-lag, plus its check interval)")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *faults == "none" {
		cfg.Faults = nil
	} else {
		fl, err := verify.ParseFaults(*faults)
		if err != nil {
			return usageError{err}
		}
		cfg.Faults = fl
	}
	// Every usage error before the directory is made: a run refused
	// leaves no empty directory behind.
	var h verify.History
	if *checkOnly != "" {
		var err error
		if h, err = readRun(*checkOnly); err != nil {
			return usageError{err}
		}
	} else if err := cfg.Validate(); err != nil {
		return usageError{err}
	} else if err := cfg.CheckMachine(ctx); err != nil {
		return err // before the directory too: there is nothing to look at
	}
	out, keep, err := verifyDir(*dir)
	if err != nil {
		return err
	}
	if *checkOnly == "" {
		cfg.Dir, cfg.Progress = out, e.stderr
		start := time.Now()
		if h, err = verify.Run(ctx, cfg); err != nil {
			return fmt.Errorf("verify run (files in %s): %w", out, err)
		}
		fmt.Fprintf(e.stderr, "verify: run took %s; checking\n", time.Since(start).Round(time.Second))
	}
	opts.OutDir = out
	rep := verify.Check(h, opts)
	var saveErr error
	if *jsonOut != "" {
		saveErr = writeRun(*jsonOut, h, rep)
	}
	writeVerifyText(e.stdout, rep)
	if saveErr != nil {
		// Told, but a violation's exit code wins: the bug found matters
		// more than the copy that could not be saved.
		fmt.Fprintf(e.stderr, "apollo: verify --json: %v\n", saveErr)
	}
	switch rep.Verdict {
	case verify.Pass:
		if saveErr != nil {
			return silentExit{exitFailure}
		}
		if !keep {
			os.RemoveAll(out)
		}
		return nil
	case verify.Fail:
		fmt.Fprintf(e.stdout, "files: %s\n", out)
		return silentExit{exitViolation}
	default:
		fmt.Fprintf(e.stdout, "files: %s\n", out)
		return silentExit{exitUndecided}
	}
}

// verifyDir is the run's directory: the one given (kept), or a new
// temporary one (removed when every check passes).
func verifyDir(dir string) (string, bool, error) {
	if dir != "" {
		return dir, true, os.MkdirAll(dir, 0o755)
	}
	d, err := os.MkdirTemp("", "apollo-verify-")
	return d, false, err
}

type verifyRun struct {
	History verify.History `json:"history"`
	Report  verify.Report  `json:"report"`
}

func writeRun(path string, h verify.History, rep verify.Report) error {
	raw, err := json.MarshalIndent(verifyRun{h, rep}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

func readRun(path string) (verify.History, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return verify.History{}, err
	}
	// A run as --json writes it, or a bare history (what a failed verify
	// test leaves behind).
	var run verifyRun
	if err := json.Unmarshal(raw, &run); err != nil {
		return verify.History{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if len(run.History.Ops) == 0 {
		if err := json.Unmarshal(raw, &run.History); err != nil {
			return verify.History{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
	}
	if len(run.History.Ops) == 0 {
		// Checking nothing would pass every check: say so instead.
		return verify.History{}, fmt.Errorf("%s holds no recorded operation: not a history written by apollo verify --json", filepath.Base(path))
	}
	return run.History, nil
}

func writeVerifyText(w io.Writer, rep verify.Report) {
	c := rep.Counts
	open := ""
	if c.UnknownOpen > 0 {
		open = fmt.Sprintf(", %d of them writes without a deadline, open to the run's end", c.UnknownOpen)
	}
	fmt.Fprintf(w, "operations: %d (ok %d, failed %d, unknown %d%s); bookings %d, drivers %d; faults injected %d (%d actions failed)\n",
		c.Ops, c.ByOutcome[verify.OK], c.ByOutcome[verify.Failed], c.ByOutcome[verify.Unknown], open, c.Bookings, c.Drivers, c.Faults, c.FaultErrors)
	for _, f := range rep.Counts.ByFault {
		fmt.Fprintf(w, "  %-18s injected %d; operations begun while it lasted: %d (ok %d, failed %d, unknown %d; 5xx or no answer %d)\n",
			f.Kind, f.Injected, f.Ops, f.OK, f.Failed, f.Unknown, f.Unavailable)
		for _, e := range f.Effects {
			fmt.Fprintf(w, "  %-18s   %s\n", "", e)
		}
	}
	for _, ch := range rep.Checks {
		fmt.Fprintf(w, "  %-26s %-8s %s\n", ch.Name, ch.Verdict, ch.Detail)
	}
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "VIOLATION %s: %s", v.Code, v.Message)
		if v.File != "" {
			fmt.Fprintf(w, " (%s)", v.File)
		}
		fmt.Fprintln(w)
		for _, f := range v.Faults {
			fmt.Fprintf(w, "  near %s\n", f)
		}
	}
	for _, p := range rep.Partitions {
		if p.Verdict == verify.Undecided {
			fmt.Fprintf(w, "UNDECIDED %s %s: %d operations, porcupine gave up after %s; check it again with --check and a longer --partition-timeout\n",
				p.Model, p.Key, p.Ops, p.Elapsed.Round(time.Second))
		}
	}
	fmt.Fprintf(w, "verdict: %s\n", rep.Verdict)
}
