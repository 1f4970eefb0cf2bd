package redisroute

import "strconv"

// fenceScript is a confirmed read's fence: a write to the read's slot, so
// that WAIT's offset covers what the read saw. It deletes its key before
// setting it again because DEL is never refused for memory, and once a
// script has written, Redis lets it finish even at maxmemory (it cannot
// stop half-way): on a full primary, which refuses a plain SET (OOM), the
// fence still goes through, and its shard's data can still be read,
// confirmed. Only a fence key never written before (the slot's first
// confirmed read) is refused there: each fence leaves its key in place.
// Sent by source: Redis caches it by its hash, and the router has no
// script loading of its own.
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
