package drill

import "context"

// Fault is something that can go wrong with a cluster, and be undone.
type Fault interface {
	// Name is a short label for reports, e.g. "kill 127.0.0.1:7001".
	Name() string
	// Inject makes the fault happen.
	Inject(ctx context.Context) error
	// Heal undoes it and returns once the cluster is healthy again.
	Heal(ctx context.Context) error
}

// FaultFunc adapts a pair of functions to Fault.
type FaultFunc struct {
	Label    string
	InjectFn func(ctx context.Context) error
	HealFn   func(ctx context.Context) error
}

// Name implements Fault.
func (f FaultFunc) Name() string { return f.Label }

// Inject implements Fault.
func (f FaultFunc) Inject(ctx context.Context) error { return f.InjectFn(ctx) }

// Heal implements Fault.
func (f FaultFunc) Heal(ctx context.Context) error {
	if f.HealFn == nil {
		return nil
	}
	return f.HealFn(ctx)
}
