package redisroute

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// WriteTrack answers, for a request that failed, "may anything it asked
// Redis to change have changed?": false only when every write it sent
// through the router was refused whole (a reply error that says it did
// nothing, or never sent), so its client may be told that nothing was
// done, and can retry or give up knowing it. A write that succeeded, may
// have run (ErrAmbiguous), ran unconfirmed, or returned nil (a script
// that may have written) counts. A plain command's error reply means it
// did nothing; a script's only when it is a refusal Redis makes before
// the script runs or before its first write (see scriptRefusals): Redis
// keeps the writes a script made before a run-time error. The router's
// own fence writes (confirmed reads) change nothing and are not counted.
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
	for i := range cmds { // by index: a read is looked at, not copied
		if !cmds[i].Write || !mayHaveApplied(cmds[i], res[i].Err, r.cfg.Policy) {
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

func mayHaveApplied(c Cmd, err error, p Policy) bool {
	if err == nil || p == Legacy2019 || errors.Is(err, redis.Nil) ||
		errors.Is(err, ErrAmbiguous) || errors.Is(err, ErrUnconfirmed) {
		return true
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) || !isScript(c) {
		return false // never sent, or a command refused whole
	}
	msg := rerr.Error()
	for _, prefix := range scriptRefusals {
		if strings.HasPrefix(msg, prefix) {
			return false
		}
	}
	return true
}

// scriptRefusals are the error replies a script gets before it writes:
// Redis's refusals of the command itself (a missing script, a busy or
// read-only or full node, min-replicas-to-write, a slot elsewhere, no
// permission to run it; OOM is raised only before a script's first
// write), and the deadline guard's LATE, which runs first (G6). Any other
// error of a script may come after some of its writes.
var scriptRefusals = []string{"LATE ", "OOM ", "NOSCRIPT ", "BUSY ", "NOPERM ", "NOREPLICAS ", "READONLY ", "MISCONF ",
	"MOVED ", "ASK ", "TRYAGAIN ", "CLUSTERDOWN ", "MASTERDOWN ", "LOADING ", "CROSSSLOT "}

func isScript(c Cmd) bool {
	name := c.name()
	return strings.EqualFold(name, "EVALSHA") || strings.EqualFold(name, "EVAL") || strings.EqualFold(name, "FCALL") ||
		strings.EqualFold(name, "EVALSHA_RO") || strings.EqualFold(name, "EVAL_RO")
}
