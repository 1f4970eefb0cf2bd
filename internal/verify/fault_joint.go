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
var instanceFaults = []string{"instance-kill", "instance-pause", "instance-clock"}

// parseJoint checks a fault name of the form "a+b": two known faults,
// one an instance's and the other the cluster's.
func parseJoint(name string) error {
	parts := strings.Split(name, "+")
	if len(parts) != 2 {
		return fmt.Errorf("fault %q: faults together are two, one of an instance and one of the cluster, e.g. instance-kill+forced-switchover", name)
	}
	for _, p := range parts {
		if !slices.Contains(FaultNames(), p) {
			return fmt.Errorf("fault %q: unknown fault %q (want some of %s)", name, p, strings.Join(FaultNames(), ", "))
		}
	}
	if slices.Contains(instanceFaults, parts[0]) == slices.Contains(instanceFaults, parts[1]) {
		return fmt.Errorf("fault %q: one of the two must be an instance's (%s) and the other the cluster's", name, strings.Join(instanceFaults, ", "))
	}
	return nil
}

// usesFault reports whether faults has name, alone or together with
// another.
func usesFault(faults []string, name string) bool {
	return slices.ContainsFunc(faults, func(f string) bool { return slices.Contains(strings.Split(f, "+"), name) })
}

// jointFault is faults injected in order and healed in the reverse order.
type jointFault []drill.Fault

func (t jointFault) Name() string {
	names := make([]string, len(t))
	for i, f := range t {
		names[i] = f.Name()
	}
	return strings.Join(names, " + ")
}

// Inject injects every fault, even after one failed: the others still
// happen, and are healed.
func (t jointFault) Inject(ctx context.Context) error {
	var errs []error
	for _, f := range t {
		errs = append(errs, f.Inject(ctx))
	}
	return errors.Join(errs...)
}

func (t jointFault) Heal(ctx context.Context) error {
	var errs []error
	for _, f := range slices.Backward(t) {
		errs = append(errs, f.Heal(ctx))
	}
	return errors.Join(errs...)
}

// Effect is the effects of the faults that measure one.
func (t jointFault) Effect() string {
	var effects []string
	for _, f := range t {
		if e, ok := f.(effecter); ok && e.Effect() != "" {
			effects = append(effects, e.Effect())
		}
	}
	return strings.Join(effects, "; ")
}
