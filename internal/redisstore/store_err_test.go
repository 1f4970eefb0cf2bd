package redisstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// storeErr tells the caller's layer what it can do about an error: a
// reply to the command itself (a script's error, a wrong type) is a bug
// to log; a cluster that could not serve the command, whatever Redis
// said while it could not, is ErrUnavailable, to try again.
func TestStoreErrTellsAReplyFromAClusterThatCouldNotServe(t *testing.T) {
	for _, tc := range []struct {
		name            string
		err             error
		wantUnavailable bool
	}{
		{"a reply", replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"a script's error", fmt.Errorf("p:1: %w", replyError("ERR user_script:1: boom")), false},
		{"down, given up", fmt.Errorf("%w: p:1: %w", redisroute.ErrUnavailable, replyError("CLUSTERDOWN The cluster is down")), true},
		{"no node", redisroute.ErrUnavailable, true},
		{"out of memory", fmt.Errorf("p:1: %w", replyError("OOM command not allowed when used memory > 'maxmemory'.")), true},
		{"a dropped connection", errors.New("read tcp: connection reset by peer"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(storeErr(tc.err), ErrUnavailable); got != tc.wantUnavailable {
				t.Errorf("storeErr(%v) unavailable = %v, want %v", tc.err, got, tc.wantUnavailable)
			}
		})
	}
}
