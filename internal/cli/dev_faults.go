package cli

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/console"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/sim"
)

// devFaults is the console's fault panel under apollo dev: it acts on the
// dev cluster's own redis-server processes (by their PIDs, through
// localcluster) and on a rainstorm booking through the instances.
type devFaults struct {
	cluster *localcluster.Cluster
	storm   atomic.Pointer[sim.Rainstorm] // set once the instances run
	reads   atomic.Pointer[devReads]      // likewise, unless reads are off
}

var _ console.Faults = (*devFaults)(nil)

func (f *devFaults) View() console.FaultsView {
	var v console.FaultsView
	for _, n := range f.cluster.Nodes() {
		v.Nodes = append(v.Nodes, console.FaultNode{Addr: n.Addr, Shard: n.Shard, Process: string(n.State())})
	}
	cfg := sim.DefaultRainstorm()
	v.Rainstorm = console.RainstormView{Lat: cfg.Center.Lat, Lng: cfg.Center.Lng, RadiusM: cfg.RadiusM, PerSecond: cfg.PerSecond}
	if s := f.storm.Load(); s != nil {
		c := s.Counts()
		v.Rainstorm.On, v.Rainstorm.Sent, v.Rainstorm.Created, v.Rainstorm.Rejected, v.Rainstorm.Failed = s.On(), c.Sent, c.Created, c.Rejected, c.Failed
	}
	if r := f.reads.Load(); r != nil {
		v.Reads = console.ReadsView{Sent: r.sent.Load(), OK: r.ok.Load(), Failed: r.failed.Load()}
	}
	return v
}

func (f *devFaults) Node(ctx context.Context, action, addr string) error {
	var node *localcluster.Node
	for _, n := range f.cluster.Nodes() {
		if n.Addr == addr {
			node = n
		}
	}
	if node == nil {
		return fmt.Errorf("%w: %q", console.ErrUnknownNode, addr)
	}
	switch action {
	case console.NodeKill:
		return node.Kill()
	case console.NodeHang:
		return node.Pause()
	case console.NodeResume:
		switch node.State() {
		case localcluster.Paused:
			return node.Resume()
		case localcluster.Stopped:
			return node.Restart(ctx)
		}
		return nil
	}
	return fmt.Errorf("%w %q: use kill, hang or resume", console.ErrUnknownAction, action)
}

func (f *devFaults) Rainstorm(_ context.Context, on bool) error {
	s := f.storm.Load()
	if s == nil {
		return fmt.Errorf("the instances are still starting: try again in a moment")
	}
	if on {
		s.Start()
	} else {
		s.Stop()
	}
	return nil
}

// start gives the rainstorm the instances to book through.
func (f *devFaults) start(apps []*app.App) error {
	s, err := sim.NewRainstorm(sim.DefaultRainstorm(), &roundRobin{apps: apps})
	if err != nil {
		return err
	}
	f.storm.Store(s)
	return nil
}

// stop ends a rainstorm still falling.
func (f *devFaults) stop() {
	if s := f.storm.Load(); s != nil {
		s.Stop()
	}
}
