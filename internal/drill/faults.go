package drill

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// Crash kills a node with SIGKILL; healing restarts it (same port, same
// identity) and waits until the cluster is healthy again.
func Crash(c *localcluster.Cluster, n *localcluster.Node, label string) Fault {
	return FaultFunc{
		Label:    label + " crash (SIGKILL) " + n.Addr,
		InjectFn: func(context.Context) error { return n.Kill() },
		HealFn: func(ctx context.Context) error {
			return errors.Join(n.Restart(ctx), c.WaitHealthy(ctx))
		},
	}
}

// Hang stops nodes with SIGSTOP: TCP connections are still accepted and
// nothing answers, the hardest failure for a client. Healing resumes them.
func Hang(c *localcluster.Cluster, label string, nodes ...*localcluster.Node) Fault {
	return FaultFunc{
		Label: fmt.Sprintf("%s hang (SIGSTOP) of %d node(s)", label, len(nodes)),
		InjectFn: func(context.Context) error {
			var errs []error
			for _, n := range nodes {
				errs = append(errs, n.Pause())
			}
			return errors.Join(errs...)
		},
		HealFn: func(ctx context.Context) error {
			var errs []error
			for _, n := range nodes {
				errs = append(errs, n.Resume())
			}
			return errors.Join(append(errs, c.WaitHealthy(ctx))...)
		},
	}
}

// Slow injects latency on a node with SIGSTOP/SIGCONT pulses (tc netem is
// not available here): every request waits up to `stop`. label says which
// node it is ("replica", "primary").
func Slow(c *localcluster.Cluster, n *localcluster.Node, label string, stop, run time.Duration) Fault {
	return &repeat{
		label: fmt.Sprintf("slow %s %s (paused %s of every %s)", label, n.Addr, stop, stop+run),
		once: func(ctx context.Context) {
			_ = n.Pause()
			sleep(ctx, stop)
			_ = n.Resume()
			sleep(ctx, run)
		},
		heal: func(ctx context.Context) error { return errors.Join(n.Resume(), c.WaitHealthy(ctx)) },
	}
}

// Lossy drops fraction of the packets between n and hosts (every address
// when none are given), each on its own chance, both ways
// (localcluster.Lossy); healing stops it and waits for the cluster to be
// whole (a node whose cluster bus was lossy may have been failing). label
// says which node it is.
func Lossy(c *localcluster.Cluster, n *localcluster.Node, label string, fraction float64, hosts ...string) Fault {
	between := "every address"
	if len(hosts) > 0 {
		between = strings.Join(hosts, ", ")
	}
	restore := func(context.Context) error { return nil }
	return FaultFunc{Label: fmt.Sprintf("%s %s losing %.3g %% of its packets (to and from %s)", label, n.Addr, 100*fraction, between),
		InjectFn: func(ctx context.Context) error {
			r, err := c.Lossy(ctx, n, fraction, hosts...)
			if err == nil {
				restore = r
			}
			return err
		},
		HealFn: func(ctx context.Context) error { return errors.Join(restore(ctx), c.WaitHealthy(ctx)) },
	}
}

// KillConnections closes every client connection of a node (CLIENT KILL
// TYPE normal) every `every`: requests in flight lose their answers,
// though the node may have run them, and new connections must be made.
// Replication links and the cluster bus are not such clients and go on.
func KillConnections(c *localcluster.Cluster, n *localcluster.Node, label string, every time.Duration) Fault {
	cl := n.Client()
	return &repeat{
		label: fmt.Sprintf("%s %s's client connections killed every %s", label, n.Addr, every),
		once: func(ctx context.Context) {
			_ = cl.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err()
			sleep(ctx, every)
		},
		heal: func(ctx context.Context) error { return errors.Join(cl.Close(), c.WaitHealthy(ctx)) },
	}
}

// PauseWrites makes a node hold every write it is sent (CLIENT PAUSE
// WRITE), as a manual failover does to its primary: reads go on, writes
// and WAIT wait, and run once it ends. At most for `bound`, should Heal
// never come; Heal ends it (CLIENT UNPAUSE).
func PauseWrites(c *localcluster.Cluster, n *localcluster.Node, label string, bound time.Duration) Fault {
	do := func(ctx context.Context, args ...any) error {
		cl := n.Client()
		defer cl.Close()
		return cl.Do(ctx, args...).Err()
	}
	return FaultFunc{
		Label:    fmt.Sprintf("%s %s holds writes (CLIENT PAUSE WRITE)", label, n.Addr),
		InjectFn: func(ctx context.Context) error { return do(ctx, "CLIENT", "PAUSE", bound.Milliseconds(), "WRITE") },
		HealFn: func(ctx context.Context) error {
			return errors.Join(do(ctx, "CLIENT", "UNPAUSE"), c.WaitHealthy(ctx))
		},
	}
}

// repeat does `once` over and over from Inject until Heal, then `heal`.
// Its goroutine is owned by the fault: Heal stops it and waits for it.
type repeat struct {
	label  string
	once   func(context.Context)
	heal   func(context.Context) error
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (r *repeat) Name() string { return r.label }

func (r *repeat) Inject(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil {
			r.once(ctx)
		}
	}()
	return nil
}

func (r *repeat) Heal(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	}
	return r.heal(ctx)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// reshard moves slots from one primary to another with redis-cli while
// the load runs. Healing waits for the move to finish.
type reshard struct {
	c        *localcluster.Cluster
	slots    int
	done     chan error
	from, to *localcluster.Node
}

// Reshard moves `slots` slots (and their keys) from shard 0 to shard 1,
// whichever nodes are their primaries when it is injected.
func Reshard(c *localcluster.Cluster, slots int) Fault {
	return &reshard{c: c, slots: slots}
}

// ReshardBetween moves `slots` slots (and their keys) from the primary from
// to the primary to; from must serve at least that many.
func ReshardBetween(c *localcluster.Cluster, from, to *localcluster.Node, slots int) Fault {
	return &reshard{c: c, slots: slots, from: from, to: to}
}

func (r *reshard) Name() string {
	if r.from != nil && r.to != nil {
		return fmt.Sprintf("reshard of %d slots from %s to %s", r.slots, r.from.Addr, r.to.Addr)
	}
	return fmt.Sprintf("reshard of %d slots", r.slots)
}

func (r *reshard) Inject(ctx context.Context) error {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return fmt.Errorf("resharding needs redis-cli (apt-get install redis-tools): %w", err)
	}
	if r.from == nil || r.to == nil {
		r.from, r.to = r.c.Primary(ctx, 0), r.c.Primary(ctx, 1)
	}
	if r.from == nil || r.to == nil {
		return errors.New("reshard: shards 0 and 1 need a primary")
	}
	args := []string{"--cluster", "reshard", r.from.Addr, "--cluster-from", r.from.ID(), "--cluster-to", r.to.ID(),
		"--cluster-slots", fmt.Sprint(r.slots), "--cluster-yes", "--cluster-pipeline", "50"}
	if p := r.c.Config().Password; p != "" {
		args = append([]string{"-a", p, "--no-auth-warning"}, args...)
		if u := r.c.Config().User; u != "" {
			args = append([]string{"--user", u}, args...)
		}
	}
	r.done = make(chan error, 1)
	cmd := exec.CommandContext(context.WithoutCancel(ctx), "redis-cli", args...)
	go func() {
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("redis-cli reshard: %w: %s", err, tail(out))
		}
		r.done <- err
	}()
	return nil
}

func (r *reshard) Heal(ctx context.Context) error {
	if r.done == nil {
		return nil
	}
	select {
	case err := <-r.done:
		return errors.Join(err, r.c.WaitHealthy(ctx))
	case <-ctx.Done():
		return ctx.Err()
	}
}

func tail(b []byte) string {
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}

// Rotation is the fault that rotates cr's password (Rotate). There is
// nothing to heal: the next rotation starts from the new password.
func Rotation(cr *Credentials) Fault { return &rotation{cr: cr} }

type rotation struct {
	cr     *Credentials
	killed int64
}

func (f *rotation) Name() string {
	return "password rotated (new one added, file rewritten, old one removed, connections killed) for user " + f.cr.User
}

func (f *rotation) Inject(ctx context.Context) (err error) {
	f.killed, err = f.cr.Rotate(ctx)
	return err
}

func (f *rotation) Heal(ctx context.Context) error { return f.cr.c.WaitHealthy(ctx) }

// Effect says what the rotation did to the clients' connections.
func (f *rotation) Effect() string {
	return fmt.Sprintf("%d of %s's connections killed", f.killed, f.cr.User)
}
