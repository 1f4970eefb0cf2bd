package redisroute

import (
	"testing"
	"time"
)

// A node whose reply arrived while this process was paused, for less than
// the stall threshold, is not ejected by the watchdog's first tick after
// the pause, which may run before the reply is read: its silence (what it
// had been waiting before the pause, plus the pause) passes the threshold
// without the pause counting as one; nor by a tick that follows the first
// at once (a ticker delivers the tick it missed, and the next may come
// right after). A node that stays silent is ejected a tick after it was
// first found stalled.
func TestTheWatchdogLooksTwiceBeforeEjectingAStalledNode(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
	x, y := c.nodes["a:1"], c.nodes["b:1"]
	every := c.r.cfg.StallAfter / 4
	at := func(d time.Duration) time.Time { return c.clock.Now().Add(d) }
	answered := func(n *node, d time.Duration) { n.begin(at(d)); n.end(at(d), 0, true) }

	w := watchdog{last: at(0)}
	x.begin(at(-every / 2)) // a request x has not answered yet
	answered(y, -every/4)
	c.r.watch(&w, at(0))
	// Paused for less than the threshold: x's reply came meanwhile, unread,
	// and y answered just before.
	pause := c.r.cfg.StallAfter - every/4
	answered(y, pause-time.Millisecond)
	c.r.watch(&w, at(pause))
	if c.ejected("a:1") {
		t.Fatalf("a:1 ejected at the first tick after a pause of %s, its reply unread", pause)
	}
	// The ticker delivers the tick it missed, and the next may follow at
	// once, before the reply is read.
	c.r.watch(&w, at(pause+time.Millisecond/10))
	if c.ejected("a:1") {
		t.Fatal("a:1 ejected at a second tick that followed the first at once, its reply unread")
	}
	x.end(at(pause+time.Millisecond), 0, true) // read now
	c.r.watch(&w, at(pause+every))
	if c.ejected("a:1") {
		t.Fatal("a:1 ejected after its reply was read")
	}

	// Silent from now on: found stalled at two ticks in a row.
	start := pause + every
	x.begin(at(start))
	for k := 1; !c.ejected("a:1"); k++ {
		now := start + time.Duration(k)*every
		if now > start+c.r.cfg.StallAfter+2*every {
			t.Fatalf("a:1, silent since %s, not ejected at %s", start, now)
		}
		answered(y, now-time.Millisecond)
		c.r.watch(&w, at(now))
		if c.ejected("a:1") && now < start+c.r.cfg.StallAfter+every {
			t.Fatalf("a:1 ejected at %s after going silent, before a second look", now-start)
		}
	}
}
