package redisstore

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Partitions names the keys of the partitioned open-bookings index:
//
//	apollo:bk:open:{<tag>}        zset    the partition's open bookings, scored by
//	                                      when each is due next (ms)
//	apollo:lease:{<tag>}          string  "<instance>:<fence>", the partition's lease (PX)
//	apollo:lease:{<tag>}:fence    counter the partition's last fencing number
//	apollo:bk:changed:{<tag>}     channel a booking of the partition changed (SPUBLISH)
//
// Partition p's tag is chosen so that its slot lies in the p-th of
// `count` equal slot ranges: a cluster's shards own contiguous, roughly
// equal ranges, so the partitions spread over every shard as evenly as
// their number allows, instead of where a hash happens to put them.
type Partitions struct {
	tags []string
}

// NewPartitions names count partitions (1 to 16384).
func NewPartitions(count int) (Partitions, error) {
	if count < 1 || count > 16384 {
		return Partitions{}, fmt.Errorf("partitions must be 1 to 16384, got %d", count)
	}
	tags := make([]string, count)
	for p := range count {
		lo, hi := p*16384/count, (p+1)*16384/count
		for k := 0; ; k++ {
			tag := "p" + strconv.Itoa(p) + "." + strconv.Itoa(k)
			if s := redisroute.Slot(tag); s >= lo && s < hi {
				tags[p] = tag
				break
			}
		}
	}
	return Partitions{tags: tags}, nil
}

// Count is the number of partitions.
func (ps Partitions) Count() int { return len(ps.tags) }

// Of is the partition of a booking.
func (ps Partitions) Of(bookingID string) int {
	h := fnv.New32a()
	h.Write([]byte(bookingID))
	return int(h.Sum32() % uint32(len(ps.tags)))
}

// OpenKey is partition p's open-bookings sorted set.
func (ps Partitions) OpenKey(p int) string { return "apollo:bk:open:{" + ps.tags[p] + "}" }

func (ps Partitions) leaseKey(p int) string      { return "apollo:lease:{" + ps.tags[p] + "}" }
func (ps Partitions) fenceKey(p int) string      { return "apollo:lease:{" + ps.tags[p] + "}:fence" }
func (ps Partitions) channel(p int) string       { return "apollo:bk:changed:{" + ps.tags[p] + "}" }
func (ps Partitions) openKeyOf(id string) string { return ps.OpenKey(ps.Of(id)) }
