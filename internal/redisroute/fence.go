package redisroute

import "strconv"

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
