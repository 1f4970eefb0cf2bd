package redisroute

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// WriteTrack answers, for a request that failed, "may anything it asked
// Redis to change have changed?": false only when every write it sent
// through the router came back refused (a reply error, or never sent), so
// its client may be told that nothing was done, and can retry or give up
// knowing it. A write that succeeded, may have run (ErrAmbiguous), ran
// unconfirmed, or returned nil (a script that may have written) counts.
// Redis runs a script whole or, refused, not at all; Apollo's scripts
// refuse (an error reply) only before they write.
type WriteTrack struct{ maybe atomic.Bool }

type trackKey struct{}

// TrackWrites returns ctx carrying a new WriteTrack for the writes sent
// with it (or with contexts made from it).
func TrackWrites(ctx context.Context) (context.Context, *WriteTrack) {
	t := &WriteTrack{}
	return context.WithValue(ctx, trackKey{}, t), t
}

// TrackedWrites is the WriteTrack ctx carries, if any.
func TrackedWrites(ctx context.Context) (*WriteTrack, bool) {
	t, ok := ctx.Value(trackKey{}).(*WriteTrack)
	return t, ok
}

// MaybeApplied reports whether a write sent so far may have taken effect.
func (t *WriteTrack) MaybeApplied() bool { return t.maybe.Load() }

// noteWrites marks ctx's WriteTrack when a write of cmds may have taken
// effect. Under legacy-2019 a failed pipeline's other commands may have
// run, so every write counts.
func (r *Router) noteWrites(ctx context.Context, cmds []Cmd, res Results) {
	var t *WriteTrack
	for i, c := range cmds {
		if !c.Write || !mayHaveApplied(res[i].Err, r.cfg.Policy) {
			continue
		}
		if t == nil {
			var ok bool
			if t, ok = TrackedWrites(ctx); !ok {
				return
			}
		}
		t.maybe.Store(true)
		return
	}
}

func mayHaveApplied(err error, p Policy) bool {
	return err == nil || p == Legacy2019 || errors.Is(err, redis.Nil) ||
		errors.Is(err, ErrAmbiguous) || errors.Is(err, ErrUnconfirmed)
}
