package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// TestEveryScriptThatWritesARecordRefusesPastItsDeadline: each script that
// writes a driver's or a booking's record for a caller, run with a
// deadline already past, answers LATE (which the store reports as
// ErrLate) and leaves the record as it was; run with no deadline it
// writes; run with its deadline slot never filled it fails and writes
// nothing. The deadline is set in the command by hand: the router would
// not send a command whose context has expired, which is the case that
// only a hung or cut-off node produces (late_test.go).
func TestEveryScriptThatWritesARecordRefusesPastItsDeadline(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 0 })
	cfg := redisroute.DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	r, err := redisroute.New(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const key = "apollo:test:{late}"
	seed := func() { // a record at version 1 the scripts below would change
		if err := r.Exec(ctx, []redisroute.Cmd{
			redisroute.Write("DEL", key),
			redisroute.Write("HSET", key, "v", 1, "json", "{}", "id", "d1", "hb", 0),
		}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a slot never filled", func(t *testing.T) {
		seed()
		before := dump(ctx, t, r, key)
		update := newGuardedScript(updateBookingScript)
		cmd := update.cmd(key, 1, `{"id":"b"}`)
		cmd.Args = append([]any{"EVAL", update.src}, cmd.Args[2:]...)
		res := r.Exec(ctx, []redisroute.Cmd{cmd})[0]
		if after := dump(ctx, t, r, key); res.Err == nil || after != before {
			t.Errorf("with its deadline slot unfilled: reply %v, %v; record %s → %s, want an error and no change", res.Val, res.Err, before, after)
		}
	})
	for _, tc := range []struct {
		name string
		s    script
		args []any
	}{
		{"driver compare-and-set", newGuardedScript(casScript), []any{1, 60000, "st", "available"}},
		{"heartbeat", newGuardedScript(heartbeatScript), []any{"d1", "1.3", "103.8", 5, "cell", 60000}},
		{"create booking", newGuardedScript(createBookingScript), []any{`{"id":"b"}`, 600}},
		{"update booking", newGuardedScript(updateBookingScript), []any{1, `{"id":"b"}`}},
		{"withdraw booking", newGuardedScript(withdrawScript), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, past := range []bool{true, false} {
				seed()
				if tc.name == "create booking" {
					r.Exec(ctx, []redisroute.Cmd{redisroute.Write("DEL", key)})
				}
				before := dump(ctx, t, r, key)
				// By source, with the deadline set by hand (exec would
				// fill it from ctx's).
				cmd := tc.s.cmd(key, tc.args...)
				cmd.Args = append([]any{"EVAL", tc.s.src}, cmd.Args[2:]...)
				cmd.Args[4] = int64(0) // no deadline
				if past {
					cmd.Args[4] = time.Now().Add(-time.Millisecond).UnixMilli()
				}
				res := r.Exec(ctx, []redisroute.Cmd{cmd})[0]
				after := dump(ctx, t, r, key)
				switch err := storeErr(res.Err); {
				case past && (!errors.Is(err, ErrLate) || !errors.Is(err, ErrUnavailable) || after != before):
					t.Errorf("past its deadline: reply %v, %v; record %s → %s, want ErrLate and no change", res.Val, err, before, after)
				case !past && (err != nil || after == before):
					t.Errorf("with no deadline: reply %v, %v; record %s → %s, want it written", res.Val, err, before, after)
				}
			}
		})
	}
}

// dump is key's hash, printed.
func dump(ctx context.Context, t *testing.T, r *redisroute.Router, key string) string {
	t.Helper()
	res := r.Exec(ctx, []redisroute.Cmd{redisroute.Read("HGETALL", key)})[0]
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return fmt.Sprint(res.Val)
}

// A guarded write whose caller gave no deadline still gets one: it lands
// within undeadlinedWriteLimit or never.
func TestAGuardedWriteWithoutADeadlineIsStillBounded(t *testing.T) {
	before := time.Now().Add(undeadlinedWriteLimit).UnixMilli()
	got := notAfter(context.Background())
	if after := time.Now().Add(undeadlinedWriteLimit).UnixMilli(); got < before || got > after {
		t.Errorf("notAfter(no deadline) = %d, want within [%d, %d]", got, before, after)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.UnixMilli(1_800_000_000_000))
	defer cancel()
	if got := notAfter(ctx); got != 1_800_000_000_000 {
		t.Errorf("notAfter(a deadline) = %d, want the deadline 1800000000000", got)
	}
}
