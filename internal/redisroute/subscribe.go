package redisroute

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Handler hears a shard channel: Message for each message published, Lost
// once if messages may have been missed from then on (the connection was
// re-established, the channel's slot moved, its node was ejected or the
// router closed). After Lost the subscription is gone; subscribe again to
// go on listening.
type Handler struct {
	Message func(payload string)
	Lost    func()
}

// subscriptions are the router's shard-channel subscriptions: one
// connection (go-redis PubSub) per channel, on the primary of its slot,
// shared by every handler of the channel. A connection per channel because
// SSUBSCRIBE takes channels of one slot only, and go-redis re-subscribes
// every channel of a PubSub in one command after a reconnect.
type subscriptions struct {
	mu     sync.Mutex
	byName map[string]*channelSub
	nextID int
	wg     sync.WaitGroup // the readers
}

type channelSub struct {
	name     string
	ready    chan struct{} // closed once subscribed, or failed (err)
	err      error         // set before ready closes
	n        *node         // set once subscribed, under subs.mu
	ps       *redis.PubSub
	handlers map[int]Handler
	lost     bool
}

// Subscribe listens to a shard channel until the returned cancel is
// called or h.Lost is. It returns once the node has confirmed the
// subscription: a message published after that reaches h. The first
// subscriber of a channel dials and subscribes without holding up the
// router's other channels; the others wait for it.
func (r *Router) Subscribe(ctx context.Context, channel string, h Handler) (cancel func(), err error) {
	r.subs.mu.Lock()
	if r.closed.Load() {
		r.subs.mu.Unlock()
		return nil, ErrClosed
	}
	if r.subs.byName == nil {
		r.subs.byName = map[string]*channelSub{}
	}
	s := r.subs.byName[channel]
	first := s == nil
	if first {
		s = &channelSub{name: channel, handlers: map[int]Handler{}, ready: make(chan struct{})}
		r.subs.byName[channel] = s
	}
	r.subs.nextID++
	id := r.subs.nextID
	s.handlers[id] = h
	r.subs.mu.Unlock()
	if first {
		r.openSub(s)
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		r.unsubscribe(s, id)
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	return func() { r.unsubscribe(s, id) }, nil
}

// openSub subscribes s on its slot's primary and starts its reader, then
// marks it ready (with err set if it failed: then it is removed). Its
// own timeout, not a caller's: the subscription is shared.
func (r *Router) openSub(s *channelSub) {
	defer close(s.ready)
	fail := func(err error) {
		s.err = err
		r.subs.mu.Lock()
		if r.subs.byName[s.name] == s {
			delete(r.subs.byName, s.name)
		}
		s.lost, s.handlers = true, nil
		r.subs.mu.Unlock()
	}
	t := r.topo.Load()
	if t == nil {
		fail(ErrNoNode)
		return
	}
	sh := t.slots[Slot(s.name)]
	if sh == nil || sh.primary == nil {
		fail(fmt.Errorf("subscribe %s: %w", s.name, ErrNoNode))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CallTimeout)
	defer cancel()
	ps := sh.primary.client.SSubscribe(ctx, s.name)
	if _, err := ps.ReceiveTimeout(ctx, r.cfg.CallTimeout); err != nil {
		ps.Close()
		fail(fmt.Errorf("subscribe %s on %s: %w", s.name, sh.primary.addr, err))
		return
	}
	r.subs.mu.Lock()
	lost := s.lost // every handler left, or the router closed, meanwhile
	var msgs <-chan any
	if !lost {
		s.n, s.ps = sh.primary, ps
		msgs = ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(time.Second), redis.WithChannelSize(1024))
		r.subs.wg.Add(1) // under the lock: Close's closeSubs counts it, or sees it lost
	}
	r.subs.mu.Unlock()
	if lost {
		ps.Close()
		return
	}
	go r.readSub(s, msgs)
}

// readSub delivers a channel's messages until its PubSub is closed. A
// subscription event after the first means go-redis reconnected and
// subscribed again: what was published meanwhile is lost.
func (r *Router) readSub(s *channelSub, msgs <-chan any) {
	defer r.subs.wg.Done()
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Message:
			r.subs.mu.Lock()
			hs := make([]Handler, 0, len(s.handlers))
			for _, h := range s.handlers {
				hs = append(hs, h)
			}
			r.subs.mu.Unlock()
			for _, h := range hs {
				h.Message(m.Payload)
			}
		case *redis.Subscription:
			r.loseSub(s, "resubscribed")
		}
	}
}

// loseSub ends a subscription whose messages may have been missed and
// tells its handlers.
func (r *Router) loseSub(s *channelSub, why string) {
	r.subs.mu.Lock()
	if s.lost {
		r.subs.mu.Unlock()
		return
	}
	s.lost = true
	if r.subs.byName[s.name] == s {
		delete(r.subs.byName, s.name)
	}
	hs := s.handlers
	s.handlers = nil
	open := s.ps != nil
	r.subs.mu.Unlock()
	if open {
		r.closePS(s) // not inline: the reader may be the caller
	}
	r.m.subscriptionsLost.WithLabelValues(why).Inc()
	for _, h := range hs {
		h.Lost()
	}
}

func (r *Router) unsubscribe(s *channelSub, id int) {
	r.subs.mu.Lock()
	defer r.subs.mu.Unlock()
	delete(s.handlers, id)
	if len(s.handlers) > 0 || s.lost {
		return
	}
	s.lost = true
	if r.subs.byName[s.name] == s {
		delete(r.subs.byName, s.name)
	}
	if s.ps != nil { // else the opener closes it when it sees lost
		r.closePS(s)
	}
}

// closePS closes a subscription's connection in a goroutine of its own
// (counted with the readers): go-redis's Close takes the PubSub's lock,
// which its health check can hold for a reconnect's dial timeout, and the
// caller may be the reader itself.
func (r *Router) closePS(s *channelSub) {
	r.subs.wg.Add(1)
	go func() { defer r.subs.wg.Done(); s.ps.Close() }()
}

// checkSubscriptions ends the subscriptions whose node is no longer its
// channel's primary or has been ejected: a failover or a dead node would
// otherwise leave them waiting for messages that go elsewhere, or nowhere.
func (r *Router) checkSubscriptions() {
	t := r.topo.Load()
	if t == nil {
		return
	}
	r.subs.mu.Lock()
	var gone []*channelSub
	var why []string
	for _, s := range r.subs.byName {
		if s.n == nil {
			continue // still opening
		}
		switch sh := t.slots[Slot(s.name)]; {
		case sh == nil || sh.primary != s.n:
			gone, why = append(gone, s), append(why, "moved")
		case !s.n.healthy():
			gone, why = append(gone, s), append(why, "ejected")
		}
	}
	r.subs.mu.Unlock()
	for i, s := range gone {
		r.loseSub(s, why[i])
	}
}

// closeSubs ends every subscription (Close).
func (r *Router) closeSubs() {
	r.subs.mu.Lock()
	all := make([]*channelSub, 0, len(r.subs.byName))
	for _, s := range r.subs.byName {
		all = append(all, s)
	}
	r.subs.mu.Unlock()
	for _, s := range all {
		r.loseSub(s, "closed")
	}
}
