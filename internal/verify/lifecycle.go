package verify

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"
	"strings"
)

// A lifecycle is the part of a state machine that Apollo's own workers
// drive while no client is looking: allocating a booking, expiring its
// reservation, reserving a driver. A history shows only what clients saw,
// so between two of their operations any number of these spontaneous moves
// may have happened. The models of this package keep such moves implicit:
// a model state (a node) stands for a state and everything the lifecycle
// can reach from it, which keeps the state sets porcupine explores small
// (a read pins a node to exactly what it returned) and finite (versions
// only go up, one per move).
type lifecycle struct {
	moves map[string][]move
	// reach[status] is, for d = 0, 1, 2, …, the (status, reference)
	// pairs d spontaneous moves lead to from status; it repeats from
	// index start with period period (0: it ends, every move exhausted).
	reach map[string]reachSeq
}

// refRule is what a move does to the entity's reference: a booking's
// driver, a driver's booking.
type refRule uint8

const (
	refKeep  refRule = iota // carried over (allocated → accepted keeps the driver)
	refAny                  // set to something the history does not name (a reservation)
	refClear                // cleared (back to searching, available)
)

// move is one spontaneous transition: it bumps the version by one.
type move struct {
	to  string
	ref refRule
}

type reachPoint struct {
	status string
	ref    refRule // refKeep: still the starting state's reference
}

type reachSeq struct {
	sets          [][]reachPoint
	start, period int
}

// newLifecycle precomputes where moves lead from every status named.
func newLifecycle(moves map[string][]move) *lifecycle {
	l := &lifecycle{moves: moves, reach: map[string]reachSeq{}}
	statuses := map[string]bool{}
	for from, ms := range moves {
		statuses[from] = true
		for _, m := range ms {
			statuses[m.to] = true
		}
	}
	for s := range statuses {
		l.reach[s] = l.sequence(s)
	}
	return l
}

// sequence walks the moves from status until the reachable set repeats
// (the state space is a handful of pairs, so it does within a few steps).
func (l *lifecycle) sequence(status string) reachSeq {
	key := func(set []reachPoint) string {
		parts := make([]string, len(set))
		for i, p := range set {
			parts[i] = fmt.Sprintf("%s/%d", p.status, p.ref)
		}
		return strings.Join(parts, ",")
	}
	seen := map[string]int{}
	cur := []reachPoint{{status, refKeep}}
	var seq reachSeq
	for {
		k := key(cur)
		if i, ok := seen[k]; ok {
			seq.start, seq.period = i, len(seq.sets)-i
			return seq
		}
		seen[k] = len(seq.sets)
		seq.sets = append(seq.sets, cur)
		next := map[reachPoint]bool{}
		for _, p := range cur {
			for _, m := range l.moves[p.status] {
				r := m.ref
				if r == refKeep {
					r = p.ref
				}
				next[reachPoint{m.to, r}] = true
			}
		}
		if len(next) == 0 {
			return seq // period 0: nothing after the last set
		}
		cur = make([]reachPoint, 0, len(next))
		for p := range next {
			cur = append(cur, p)
		}
		slices.SortFunc(cur, func(a, b reachPoint) int {
			if c := strings.Compare(a.status, b.status); c != 0 {
				return c
			}
			return int(a.ref) - int(b.ref)
		})
	}
}

// anyRef stands for a reference the history does not name.
const anyRef = "*"

// node is a set of states of one entity. As a set of concrete states it
// holds Status and Ref at Version, or, when Every > 0, at every version
// Version, Version+Every, …; as a model state it stands for those and all
// that spontaneous moves reach from them. Exists false is the entity not
// existing (Apollo has no record of it). It is comparable, so porcupine's
// default equality works.
type node struct {
	Exists  bool
	Status  string
	Ref     string // a booking's driver, a driver's booking; anyRef: any
	Version int64
	Every   int64
	// Confirmed (bookings): a create was answered OK, so the booking may
	// never be withdrawn.
	Confirmed bool
}

// seen is one concrete state as an answer reported it.
type seen struct {
	Status  string
	Ref     string
	Version int64
}

// has reports whether the concrete state s is one of n's own states
// (not counting what moves reach from them).
func (n node) has(s seen) bool {
	if !n.Exists || n.Status != s.Status || !refMatch(n.Ref, s.Ref) || s.Version < n.Version {
		return false
	}
	if n.Every == 0 {
		return s.Version == n.Version
	}
	return (s.Version-n.Version)%n.Every == 0
}

func refMatch(a, b string) bool { return a == anyRef || b == anyRef || a == b }

// pin is the node of exactly s.
func pin(s seen, confirmed bool) node {
	return node{Exists: true, Status: s.Status, Ref: s.Ref, Version: s.Version, Confirmed: confirmed}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// spans yields every state n stands for (its own and all that moves
// reach from them) as nodes read as plain sets (see has).
func (l *lifecycle) spans(n node) iter.Seq[node] {
	return func(yield func(node) bool) {
		if !n.Exists {
			return
		}
		seq, ok := l.reach[n.Status]
		if !ok { // a status the lifecycle does not know (an odd answer): no moves
			yield(n)
			return
		}
		for d, set := range seq.sets {
			every := n.Every
			if seq.period > 0 && d >= seq.start {
				// Reached again every period moves. Every is a superset
				// of the true versions when both are set: sound, never
				// stricter.
				every = gcd(every, int64(seq.period))
			}
			for _, p := range set {
				ref := n.Ref
				switch p.ref {
				case refAny:
					ref = anyRef
				case refClear:
					ref = ""
				}
				if !yield(node{Exists: true, Status: p.status, Ref: ref, Version: n.Version + int64(d), Every: every, Confirmed: n.Confirmed}) {
					return
				}
			}
		}
	}
}

// reaches reports whether s is n or can be reached from it by moves.
func (l *lifecycle) reaches(n node, s seen) bool {
	for sp := range l.spans(n) {
		if sp.has(s) {
			return true
		}
	}
	return false
}

// event is a transition made by a client's operation: from the states
// from accepts, to the state it leads to (version bumped by one).
type event struct {
	from func(status, ref string) bool
	to   string
	ref  func(ref string) string
}

// after is every state e can lead to from a state n stands for, as plain
// sets (see has); empty when e is impossible from all of them.
func (l *lifecycle) after(n node, e event) []node {
	var out []node
	for sp := range l.spans(n) {
		if !e.from(sp.Status, sp.Ref) {
			continue
		}
		out = append(out, node{Exists: true, Status: e.to, Ref: e.ref(sp.Ref), Version: sp.Version + 1, Every: sp.Every, Confirmed: sp.Confirmed})
	}
	return out
}

// hashNode is porcupine's Hash for nodes (equal nodes, equal hashes).
func hashNode(state any) uint64 {
	n := state.(node)
	h := fnv.New64a()
	flags := byte(0)
	if n.Exists {
		flags |= 1
	}
	if n.Confirmed {
		flags |= 2
	}
	var buf [17]byte
	buf[0] = flags
	binary.LittleEndian.PutUint64(buf[1:], uint64(n.Version))
	binary.LittleEndian.PutUint64(buf[9:], uint64(n.Every))
	h.Write(buf[:])
	h.Write([]byte(n.Status))
	h.Write([]byte{0})
	h.Write([]byte(n.Ref))
	return h.Sum64()
}

// describeNode is porcupine's DescribeState for nodes.
func describeNode(state any) string {
	n := state.(node)
	if !n.Exists {
		return "absent"
	}
	var b strings.Builder
	b.WriteString(n.Status)
	if n.Ref != "" {
		b.WriteString(" " + n.Ref)
	}
	if n.Every == 0 {
		fmt.Fprintf(&b, " v%d", n.Version)
	} else {
		fmt.Fprintf(&b, " v%d+%dk", n.Version, n.Every)
	}
	return b.String()
}
