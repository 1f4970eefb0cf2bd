package redisroute

import "time"

// Every attempt is sent on a goroutine of its own, so that a hung node
// holds up nothing else. A fresh goroutine starts with a small stack that
// go-redis's pipeline path outgrows at once: growing it (copystack) was an
// eighth of the router's CPU per call. So senders are reused: an attempt
// goes to a sender left idle by an earlier one, or to a new one if none is
// idle — never waiting for one, whatever a node does. A sender idle for
// senderIdle ends, so the pool shrinks back after a burst (a hang leaves
// many attempts outstanding at once).
const senderIdle = 10 * time.Second

// spawn runs f on an idle sender, or on a new one.
func (r *Router) spawn(f func()) {
	select {
	case r.idle <- f:
	default:
		r.wg.Add(1)
		go r.sender(f)
	}
}

// sender runs f, then waits for more work until idle for senderIdle or
// the router closes. The router owns it (counted in wg).
func (r *Router) sender(f func()) {
	defer r.wg.Done()
	idle := time.NewTimer(senderIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(senderIdle)
		select {
		case f = <-r.idle:
		case <-idle.C:
			return
		case <-r.stop:
			return
		}
	}
}
