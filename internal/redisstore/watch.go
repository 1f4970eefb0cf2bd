package redisstore

import (
	"context"
	"errors"
	"sync"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// subscriber is what the long polls need from redisroute: shard channels.
type subscriber interface {
	Subscribe(ctx context.Context, channel string, h redisroute.Handler) (cancel func(), err error)
}

// errNoSubscribe: the router given to the store cannot subscribe.
var errNoSubscribe = errors.New("the redis router cannot subscribe to channels")

// watchHub shares one subscription per partition channel among every
// long poll of this process on that partition's bookings: a waiter costs
// Redis nothing while its booking does not change, whatever the number of
// waiters. Each change of a booking (Update, Withdraw) is published on its
// partition's channel with the booking's ID.
type watchHub struct {
	sub subscriber
	mu  sync.Mutex
	// parts: partition → its subscription and waiters by booking.
	parts map[int]*partWatch
}

type partWatch struct {
	cancel  func()
	waiters map[string]map[*waiter]struct{}
	ready   chan struct{} // closed once subscribed (or failed: then err)
	err     error
}

type waiter struct {
	c    chan struct{} // a change: buffered, one pending at most
	lost chan struct{} // closed when the subscription is lost
	once sync.Once
}

func (w *waiter) notify() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func (w *waiter) drop() { w.once.Do(func() { close(w.lost) }) }

// Watch implements booking.Watcher: it returns once a change of booking id
// published from now on is sure to be heard. Changed fires on each change
// (at most one pending); Lost closes if changes may have been missed
// from some point on (watch again, then read).
func (s *Bookings) Watch(ctx context.Context, id string) (booking.Watch, error) {
	if s.watch.sub == nil {
		return booking.Watch{}, errNoSubscribe
	}
	p := s.ps.Of(id)
	h := &s.watch
	w := &waiter{c: make(chan struct{}, 1), lost: make(chan struct{})}
	h.mu.Lock()
	if h.parts == nil {
		h.parts = map[int]*partWatch{}
	}
	pw := h.parts[p]
	first := pw == nil
	if first {
		pw = &partWatch{waiters: map[string]map[*waiter]struct{}{}, ready: make(chan struct{})}
		h.parts[p] = pw
	}
	if pw.waiters[id] == nil {
		pw.waiters[id] = map[*waiter]struct{}{}
	}
	pw.waiters[id][w] = struct{}{}
	h.mu.Unlock()
	if first {
		// Not this waiter's ctx: the subscription is shared (the router
		// bounds it with its own timeout).
		cancel, err := h.sub.Subscribe(context.WithoutCancel(ctx), s.ps.channel(p), redisroute.Handler{
			Message: func(bookingID string) { h.changed(pw, bookingID) },
			Lost:    func() { h.lose(p, pw) },
		})
		h.mu.Lock()
		pw.cancel, pw.err = cancel, err
		orphan := err == nil && h.parts[p] != pw // its waiters left, or it was lost, meanwhile
		h.mu.Unlock()
		if orphan {
			cancel()
		}
		close(pw.ready)
		if err != nil {
			h.lose(p, pw)
		}
	}
	select {
	case <-pw.ready:
	case <-ctx.Done():
		h.leave(p, pw, id, w)
		return booking.Watch{}, ctx.Err()
	}
	if pw.err != nil {
		h.leave(p, pw, id, w)
		return booking.Watch{}, storeErr(pw.err)
	}
	return booking.Watch{Changed: w.c, Lost: w.lost, Stop: func() { h.leave(p, pw, id, w) }}, nil
}

func (h *watchHub) changed(pw *partWatch, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range pw.waiters[id] {
		w.notify()
	}
}

// lose ends a partition's subscription: every waiter of it is told, and
// the next Watch subscribes afresh.
func (h *watchHub) lose(p int, pw *partWatch) {
	h.mu.Lock()
	if h.parts[p] == pw {
		delete(h.parts, p)
	}
	var all []*waiter
	for _, ws := range pw.waiters {
		for w := range ws {
			all = append(all, w)
		}
	}
	pw.waiters = map[string]map[*waiter]struct{}{}
	h.mu.Unlock()
	for _, w := range all {
		w.drop()
	}
}

// leave removes a waiter; the partition's last one ends its subscription.
func (h *watchHub) leave(p int, pw *partWatch, id string, w *waiter) {
	h.mu.Lock()
	delete(pw.waiters[id], w)
	if len(pw.waiters[id]) == 0 {
		delete(pw.waiters, id)
	}
	var cancel func()
	if len(pw.waiters) == 0 && h.parts[p] == pw {
		delete(h.parts, p)
		cancel = pw.cancel
	}
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
