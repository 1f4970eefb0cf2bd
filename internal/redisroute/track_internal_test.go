package redisroute

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestAWriteCountsAsMaybeAppliedUnlessItWasRefused(t *testing.T) {
	refused := errors.New("OOM command not allowed when used memory > 'maxmemory'.")
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
