package redisroute

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestAWriteCountsAsMaybeAppliedUnlessItWasRefused(t *testing.T) {
	refused := replyErr(t, "-OOM command not allowed when used memory > 'maxmemory'.")
	for _, tc := range []struct {
		name   string
		cmds   []Cmd
		errs   []error
		policy Policy
		want   bool
	}{
		{"a read", []Cmd{{Args: []any{"GET", "k"}, Key: "k"}}, []error{nil}, ReplicaPreferred, false},
		{"a write refused", []Cmd{Write("SET", "k", 1)}, []error{refused}, ReplicaPreferred, false},
		{"a write never sent", []Cmd{Write("SET", "k", 1)}, []error{fmt.Errorf("%w: dial refused", ErrUnavailable)}, ReplicaPreferred, false},
		{"a write done", []Cmd{Write("SET", "k", 1)}, []error{nil}, ReplicaPreferred, true},
		{"a script that returned nil", []Cmd{Write("EVALSHA", "x", 1, "k")}, []error{redis.Nil}, ReplicaPreferred, true},
		{"a script refused when full, before its first write", []Cmd{Write("EVALSHA", "x", 1, "k")},
			[]error{replyErr(t, "-OOM command not allowed when used memory > 'maxmemory'. script: x, on @user_script:20.")}, ReplicaPreferred, false},
		{"a script past its deadline", []Cmd{Write("evalsha", "x", 1, "k")}, []error{replyErr(t, "-LATE the write reached Redis after its deadline")}, ReplicaPreferred, false},
		{"a script that failed after writing (an ACL without PEXPIRE)", []Cmd{Write("EVALSHA", "x", 1, "k")},
			[]error{replyErr(t, "-ERR The user executing the script can't run this command or subcommand script: x, on @user_script:4.")}, ReplicaPreferred, true},
		{"a script's WRONGTYPE after a write", []Cmd{Write("EVAL", "...", 2, "a", "b")},
			[]error{replyErr(t, "-WRONGTYPE Operation against a key holding the wrong kind of value script: x, on @user_script:2.")}, ReplicaPreferred, true},
		{"a plain command's WRONGTYPE did nothing", []Cmd{Write("ZADD", "k", 1, "m")},
			[]error{replyErr(t, "-WRONGTYPE Operation against a key holding the wrong kind of value")}, ReplicaPreferred, false},
		{"a write without a reply", []Cmd{Write("SET", "k", 1)}, []error{fmt.Errorf("%w: i/o timeout", ErrAmbiguous)}, ReplicaPreferred, true},
		{"a write unconfirmed", []Cmd{Write("SET", "k", 1)}, []error{ErrUnconfirmed}, ReplicaPreferred, true},
		{"a refused write beside a done one", []Cmd{Write("SET", "a", 1), Write("SET", "b", 1)}, []error{refused, nil}, ReplicaPreferred, true},
		{"legacy-2019: a failed pipeline may have run its writes", []Cmd{Write("SET", "k", 1)}, []error{ErrLegacyPipelineFailed}, Legacy2019, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Router{cfg: Config{Policy: tc.policy}}
			ctx, track := TrackWrites(context.Background())
			res := make(Results, len(tc.errs))
			for i, err := range tc.errs {
				res[i].Err = err
			}
			r.noteWrites(ctx, tc.cmds, res)
			if got := track.MaybeApplied(); got != tc.want {
				t.Errorf("MaybeApplied = %v, want %v", got, tc.want)
			}
		})
	}
	r := &Router{}
	r.noteWrites(context.Background(), []Cmd{Write("SET", "k", 1)}, Results{{}}) // untracked: nothing to mark, no panic
}
