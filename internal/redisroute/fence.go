package redisroute

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// fenceScript is a confirmed read's fence on a node that is full: a
// primary at its maxmemory refuses a plain SET (OOM), and every confirmed
// read of its shard would fail while its data sits there. The script
// deletes its key before it sets it again: DEL is never refused for
// memory, and once a script has written, Redis lets it finish even at
// maxmemory (it cannot stop half-way). Only a fence key never written
// before (the slot's first confirmed read) is still refused: each fence
// leaves its key in place. A script costs Redis more than a SET
// (BenchmarkFreshRead's confirmed reads: 19,285 reads/s against 22,502),
// so it is sent only to a node known to be full (node.full); by source,
// since Redis caches it by its hash and the router loads no scripts.
const fenceScript = "redis.call('DEL', KEYS[1]) return redis.call('SET', KEYS[1], '1')"

// fenceKey is the key a confirmed read writes after itself: one per hash
// slot (so at most 16384 tiny keys, each overwritten, never growing), in
// the read's slot so that it lands on the node that answered the read.
func (r *Router) fenceKey(slot int) string {
	r.fenceOnce.Do(func() {
		// About 170,000 CRC16s, once per process: every slot gets the first
		// "apollo:fence:{n}" that hashes to it.
		keys := make([]string, numSlots)
		for n, left := 0, numSlots; left > 0; n++ {
			k := "apollo:fence:{" + strconv.Itoa(n) + "}"
			if s := Slot(k); keys[s] == "" {
				keys[s] = k
				left--
			}
		}
		r.fenceKeys = keys
	})
	return r.fenceKeys[slot]
}

// newFence is the fence write for key on n: a SET, or fenceScript on a
// node that refused a write for memory since its memory last had room.
func newFence(ctx context.Context, n *node, key string) *redis.Cmd {
	if n.full.Load() {
		return redis.NewCmd(ctx, "eval", fenceScript, 1, key)
	}
	return redis.NewCmd(ctx, "set", key, "1")
}
