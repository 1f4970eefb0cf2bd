package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apollo-platform/apollo/internal/drill"
)

// A fault of the fleet and a fault of the cluster happen together in
// production as often as apart: an instance killed mid-allocation while a
// failover runs, an instance frozen through a switchover. A fault named
// "a+b" injects a and then b, holds both, and heals them in the reverse
// order. One of them must be an instance's and the other the cluster's:
// two faults of Redis nodes may strike two nodes of one shard, which is
// past what the guarantees promise (a replica promoted without a write its
// crashed primary acknowledged).

// instanceFaults are the faults of an Apollo instance, not of Redis.
var instanceFaults = []string{"instance-kill", "instance-pause", "instance-clock", "instance-partition", "instance-primary-partition", "instance-replica-partition", "instance-primary-oneway", "instance-lossy", "instance-log-stall"}

// parseJoint checks a fault name of the form "a+b": two known faults,
// one an instance's and the other the cluster's. It returns the name
// without spaces around the parts.
func parseJoint(name string) (string, error) {
	parts := faultParts(name)
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if len(parts) != 2 {
		return "", fmt.Errorf("fault %q: faults together are two, one of an instance and one of the cluster, e.g. instance-kill+forced-switchover", name)
	}
	for _, p := range parts {
		if !slices.Contains(FaultNames(), p) {
			return "", fmt.Errorf("fault %q: unknown fault %q (want some of %s)", name, p, strings.Join(FaultNames(), ", "))
		}
	}
	if slices.Contains(instanceFaults, parts[0]) == slices.Contains(instanceFaults, parts[1]) {
		return "", fmt.Errorf("fault %q: one of the two must be an instance's (%s) and the other the cluster's", name, strings.Join(instanceFaults, ", "))
	}
	return strings.Join(parts, "+"), nil
}

// faultParts is the faults a fault kind names: itself, or a pair's two.
func faultParts(kind string) []string { return strings.Split(kind, "+") }

// usesFault reports whether faults has name, alone or together with
// another.
func usesFault(faults []string, name string) bool {
	return slices.ContainsFunc(faults, func(f string) bool { return slices.Contains(faultParts(f), name) })
}

// jointFault is faults injected in order and healed in the reverse order.
type jointFault struct {
	parts  []drill.Fault
	failed []error // the parts' injections that failed, for Effect
}

func (t *jointFault) Name() string {
	names := make([]string, len(t.parts))
	for i, f := range t.parts {
		names[i] = f.Name()
	}
	return strings.Join(names, " + ")
}

// Inject injects every part, even after one failed: the others still
// happen, and are healed. It fails only when every part did, so that a
// fault that partly happened keeps its window in the history (an inject
// that failed has none); Effect tells of the parts that failed.
func (t *jointFault) Inject(ctx context.Context) error {
	t.failed = nil
	for _, f := range t.parts {
		if err := f.Inject(ctx); err != nil {
			t.failed = append(t.failed, fmt.Errorf("%s: %w", f.Name(), err))
		}
	}
	if len(t.failed) == len(t.parts) {
		return errors.Join(t.failed...)
	}
	return nil
}

// Heal heals every part, the last injected first, each within healWithin
// of its own: a slow heal of one must not leave the other no time.
func (t *jointFault) Heal(ctx context.Context) error {
	var errs []error
	for _, f := range slices.Backward(t.parts) {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healWithin)
		if err := f.Heal(pctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name(), err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// Effect is the effects of the parts that measure one, and the parts that
// could not be injected.
func (t *jointFault) Effect() string {
	var effects []string
	for _, err := range t.failed {
		effects = append(effects, "not injected: "+err.Error())
	}
	for _, f := range t.parts {
		if e, ok := f.(effecter); ok && e.Effect() != "" {
			effects = append(effects, e.Effect())
		}
	}
	return strings.Join(effects, "; ")
}
