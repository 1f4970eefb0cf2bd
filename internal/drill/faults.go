package drill

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
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

// slow makes a node answer late: it is stopped for `stop`, then runs for
// `run`, over and over. The pulses goroutine is owned by the fault: Heal
// stops it and waits for it.
type slow struct {
	c         *localcluster.Cluster
	n         *localcluster.Node
	label     string
	stop, run time.Duration
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// Slow injects latency on a node with SIGSTOP/SIGCONT pulses (tc netem is
// not available here): every request waits up to `stop`.
// label says which node it is ("replica", "primary").
func Slow(c *localcluster.Cluster, n *localcluster.Node, label string, stop, run time.Duration) Fault {
	return &slow{c: c, n: n, label: label, stop: stop, run: run}
}

func (s *slow) Name() string {
	return fmt.Sprintf("slow %s %s (paused %s of every %s)", s.label, s.n.Addr, s.stop, s.stop+s.run)
}

func (s *slow) Inject(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for ctx.Err() == nil {
			_ = s.n.Pause()
			sleep(ctx, s.stop)
			_ = s.n.Resume()
			sleep(ctx, s.run)
		}
	}()
	return nil
}

func (s *slow) Heal(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
		s.wg.Wait()
	}
	return errors.Join(s.n.Resume(), s.c.WaitHealthy(ctx))
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
