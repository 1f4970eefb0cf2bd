package redisstore

import (
	"fmt"
	"testing"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Three shards own slots 0-5460, 5461-10922 and 10923-16383 in a cluster
// made by redis-cli --cluster create (and in localcluster).
func shardOfSlot(slot int) int { return min(slot/5461, 2) }

func TestPartitionsSpreadEvenlyOverThreeShards(t *testing.T) {
	for _, n := range []int{3, 16, 64, 1024} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ps, err := NewPartitions(n)
			if err != nil {
				t.Fatal(err)
			}
			var per [3]int
			for p := range n {
				for _, k := range []string{ps.OpenKey(p), ps.leaseKey(p), ps.fenceKey(p), ps.channel(p)} {
					if redisroute.Slot(k) != redisroute.Slot(ps.OpenKey(p)) {
						t.Fatalf("partition %d: %s is not in its index's slot", p, k)
					}
				}
				per[shardOfSlot(redisroute.Slot(ps.OpenKey(p)))]++
			}
			lo, hi := min(per[0], per[1], per[2]), max(per[0], per[1], per[2])
			if hi-lo > 1 {
				t.Fatalf("partitions per shard %v: not even", per)
			}
		})
	}
}

func TestABookingAlwaysFallsInOnePartition(t *testing.T) {
	ps, err := NewPartitions(64)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 64)
	for i := range 64_000 {
		id := fmt.Sprintf("bk-%024x", i)
		p := ps.Of(id)
		if p != ps.Of(id) || p < 0 || p >= 64 {
			t.Fatalf("Of(%s) = %d, unstable or out of range", id, p)
		}
		counts[p]++
	}
	for p, c := range counts {
		if c < 800 || c > 1200 { // 1,000 expected; 6 standard deviations is ±190
			t.Fatalf("partition %d got %d of 64,000 bookings", p, c)
		}
	}
}

func TestNewPartitionsRefusesACountOutOfRange(t *testing.T) {
	for _, n := range []int{0, -1, 16385} {
		if _, err := NewPartitions(n); err == nil {
			t.Errorf("NewPartitions(%d) = nil error", n)
		}
	}
}
