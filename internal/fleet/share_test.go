package fleet

import (
	"fmt"
	"slices"
	"testing"
)

func TestShareSplitsEveryPartitionExactlyOnceAndFairly(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		for _, parts := range []int{1, 5, 64} {
			t.Run(fmt.Sprintf("%d members %d partitions", n, parts), func(t *testing.T) {
				var members []string
				for i := range n {
					members = append(members, fmt.Sprintf("apollo-%d", n-i)) // unsorted on purpose
				}
				owner := make([]int, parts)
				minShare, maxShare := parts, 0
				for _, m := range members {
					mine := Share(members, m, parts)
					minShare, maxShare = min(minShare, len(mine)), max(maxShare, len(mine))
					for _, p := range mine {
						owner[p]++
					}
				}
				for p, k := range owner {
					if k != 1 {
						t.Fatalf("partition %d has %d owners, want 1", p, k)
					}
				}
				if maxShare-minShare > 1 {
					t.Fatalf("shares range from %d to %d partitions", minShare, maxShare)
				}
			})
		}
	}
}

func TestShareCountsInAMemberMissingFromTheList(t *testing.T) {
	got := Share([]string{"b"}, "a", 4)
	if want := []int{0, 2}; !slices.Equal(got, want) {
		t.Fatalf("Share = %v, want %v", got, want)
	}
}
