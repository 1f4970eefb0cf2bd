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
	n        *node
	ps       *redis.PubSub
	handlers map[int]Handler
	lost     bool
}

// Subscribe listens to a shard channel until the returned cancel is
// called or h.Lost is. It returns once the node has confirmed the
// subscription: a message published after that reaches h.
func (r *Router) Subscribe(ctx context.Context, channel string, h Handler) (cancel func(), err error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	r.subs.mu.Lock()
	defer r.subs.mu.Unlock()
	if r.subs.byName == nil {
		r.subs.byName = map[string]*channelSub{}
	}
	s := r.subs.byName[channel]
	if s == nil {
		if s, err = r.openSub(ctx, channel); err != nil {
			return nil, err
		}
		r.subs.byName[channel] = s
	}
	r.subs.nextID++
	id := r.subs.nextID
	s.handlers[id] = h
	return func() { r.unsubscribe(s, id) }, nil
}

func (r *Router) openSub(ctx context.Context, channel string) (*channelSub, error) {
	t := r.topo.Load()
	if t == nil {
		return nil, ErrNoNode
	}
	sh := t.slots[Slot(channel)]
	if sh == nil || sh.primary == nil {
		return nil, fmt.Errorf("subscribe %s: %w", channel, ErrNoNode)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	ps := sh.primary.client.SSubscribe(ctx, channel)
	if _, err := ps.ReceiveTimeout(ctx, r.cfg.CallTimeout); err != nil {
		ps.Close()
		return nil, fmt.Errorf("subscribe %s on %s: %w", channel, sh.primary.addr, err)
	}
	s := &channelSub{name: channel, n: sh.primary, ps: ps, handlers: map[int]Handler{}}
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(time.Second), redis.WithChannelSize(1024))
	r.subs.wg.Add(1)
	go r.readSub(s, msgs)
	return s, nil
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
	r.subs.mu.Unlock()
	r.closePS(s) // not inline: the reader may be the caller
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
	r.closePS(s)
}

// closePS closes a subscription's connection in a goroutine of its own
// (counted with the readers): go-redis's Close waits for the goroutine
// that feeds the reader, which may be blocked on the caller.
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
