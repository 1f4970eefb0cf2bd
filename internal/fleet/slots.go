package fleet

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// numSlots is Redis Cluster's slot count.
const numSlots = 16384

// SlotSet is a set of Redis Cluster slots: which slots' primaries an
// instance reached. Sets, not counts, are compared: an instance cut off
// from one primary and another cut off from a second one each reach what
// the other does not, and neither is better placed.
type SlotSet [numSlots / 64]uint64

// SlotSetOf is the set of the inclusive ranges [first, last]; a slot out
// of range is left out.
func SlotSetOf(ranges [][2]int) SlotSet {
	var s SlotSet
	for _, r := range ranges {
		for slot := max(r[0], 0); slot <= min(r[1], numSlots-1); slot++ {
			s[slot/64] |= 1 << (slot % 64)
		}
	}
	return s
}

// Len is how many slots s holds.
func (s SlotSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Contains reports whether s holds every slot of o.
func (s SlotSet) Contains(o SlotSet) bool {
	for i := range s {
		if o[i]&^s[i] != 0 {
			return false
		}
	}
	return true
}

// StrictlyContains reports whether s holds every slot of o and more.
func (s SlotSet) StrictlyContains(o SlotSet) bool { return s != o && s.Contains(o) }

// String is s as ranges, "0-5460,10923-16383", or "-" when empty: how a
// report stores it (ParseSlotSet reads it back).
func (s SlotSet) String() string {
	var b strings.Builder
	for slot := 0; slot < numSlots; slot++ {
		if !s.has(slot) {
			continue
		}
		last := slot
		for last+1 < numSlots && s.has(last+1) {
			last++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(slot))
		if last > slot {
			b.WriteString("-" + strconv.Itoa(last))
		}
		slot = last
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

func (s SlotSet) has(slot int) bool { return s[slot/64]&(1<<(slot%64)) != 0 }

// ParseSlotSet reads what String wrote.
func ParseSlotSet(v string) (SlotSet, error) {
	var ranges [][2]int
	if v != "-" {
		for _, part := range strings.Split(v, ",") {
			first, last, isRange := strings.Cut(part, "-")
			if !isRange {
				last = first
			}
			a, errA := strconv.Atoi(first)
			b, errB := strconv.Atoi(last)
			if errA != nil || errB != nil || a < 0 || b < a || b >= numSlots {
				return SlotSet{}, fmt.Errorf("slot range %q: want first-last within 0-%d", part, numSlots-1)
			}
			ranges = append(ranges, [2]int{a, b})
		}
	}
	return SlotSetOf(ranges), nil
}
