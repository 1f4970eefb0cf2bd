package redisstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrLate: a write reached Redis after its caller's deadline and was not
// made. The store wraps it in ErrUnavailable; unlike most unavailability
// it is certain that this write did nothing.
var ErrLate = errors.New("the write reached Redis after its deadline and was not made")

// lateGuard opens every script that writes a driver's or a booking's
// record on behalf of a caller who waits for the answer: it takes the
// caller's deadline (unix ms, 0 for none) off the front of ARGV and, if
// Redis's clock is past it, refuses with a LATE error before writing
// anything. A slot left at unfilledDeadline (a command sent without
// script.exec) is refused too: a guard that was never armed fails closed.
//
// Why: a caller that gives up at its deadline tells its client the write
// may or may not have happened. Without the guard "may" has no end: a
// command held in a hung primary's socket, or retransmitted by TCP once a
// partition heals, runs whenever it arrives, seconds or minutes after the
// answer. With it, a write answered "unavailable" either happened before
// its deadline or never: a client that reads after the deadline sees the
// outcome, and a checker can close the operation there. The deadline is
// sent in the clock of the node it goes to: exec adds the offset the
// router last measured for that node's clock (at its earliest, so never
// later than the caller's), so a node whose clock is off does not stretch
// the bound (behind) or refuse every write (ahead). What is left is the
// skew between the caller's clock and Apollo's, and a clock that steps
// between two readings.
const lateGuard = `
local deadline = tonumber(table.remove(ARGV, 1))
if deadline < 0 then
  return redis.error_reply('ERR apollo: the deadline of a guarded script was not filled in')
end
if deadline > 0 then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > deadline then
    return redis.error_reply('LATE the write reached Redis after its deadline')
  end
end
`

// unfilledDeadline holds a guarded command's deadline slot until exec
// fills it.
const unfilledDeadline = int64(-1)

// undeadlinedWriteLimit bounds a guarded write whose caller gave it no
// deadline (every write route and worker gives one; a new caller might
// not): it lands within this of being sent or never. Long, so that it
// never refuses a write a call without a deadline could still be waiting
// for (the router ends such a call at --redis-call-timeout).
const undeadlinedWriteLimit = 30 * time.Second

// notAfter is ctx's deadline, or undeadlinedWriteLimit from now if it has
// none: no guarded write goes out unbounded.
func notAfter(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(undeadlinedWriteLimit)
	}
	return d
}

// deadlineArg is deadline in a node's clock, in unix ms, rounded down
// (never later than the caller's), and never 0 or less, which the guard
// reads as no deadline or an unfilled one: the node's clock now (time.Now
// moved by its offset) plus the time left until the deadline, which is
// taken on the monotonic clock when the deadline has a reading of it (a
// context's does), so that a step of the host's clock since the deadline
// was set does not move it.
func deadlineArg(deadline time.Time, offset time.Duration) int64 {
	now := time.Now()
	return max(now.Add(offset).Add(deadline.Sub(now)).UnixMilli(), 1)
}

// isLate reports a reply of lateGuard's.
func isLate(rerr redis.Error) bool { return strings.HasPrefix(rerr.Error(), "LATE ") }
