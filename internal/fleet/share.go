package fleet

import "slices"

// Share is the partitions of self's fair share among members: partition p
// belongs to the member ranked p mod len(members) in sorted order. Every
// member that sees the same list computes the same split, which differs by
// at most one partition between any two members. A self missing from
// members is counted in (its own heartbeat may not have landed yet).
func Share(members []string, self string, partitions int) []int {
	ms := slices.Clone(members)
	if !slices.Contains(ms, self) {
		ms = append(ms, self)
	}
	slices.Sort(ms)
	ms = slices.Compact(ms)
	rank := slices.Index(ms, self)
	var mine []int
	for p := rank; p < partitions; p += len(ms) {
		mine = append(mine, p)
	}
	return mine
}

// Alone is a process that owns every partition by itself, unfenced: for
// tools and tests that run the background work without a fleet.
type Alone int

// Owned lists every partition of the Alone's count, with empty tokens.
func (a Alone) Owned() []Lease {
	out := make([]Lease, int(a))
	for p := range out {
		out[p] = Lease{Partition: p}
	}
	return out
}

// Gained never fires: an Alone's partitions never change.
func (Alone) Gained() <-chan struct{} { return nil }
