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
	r := onePrimary(t)
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
		{"withdraw booking", newGuardedScript(withdrawScript), []any{"{}"}},
		{"keep booking", newGuardedScript(keepScript), nil},
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

// onePrimary is a router on a cluster of one primary, closed with the test.
func onePrimary(t *testing.T) *redisroute.Router {
	t.Helper()
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 0 })
	cfg := redisroute.DefaultConfig()
	cfg.Addrs = c.Addrs()[:1]
	r, err := redisroute.New(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
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
	before := time.Now().Add(undeadlinedWriteLimit)
	got := notAfter(context.Background())
	if after := time.Now().Add(undeadlinedWriteLimit); got.Before(before) || got.After(after) {
		t.Errorf("notAfter(no deadline) = %v, want within [%v, %v]", got, before, after)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.UnixMilli(1_800_000_000_000))
	defer cancel()
	if got := notAfter(ctx); !got.Equal(time.UnixMilli(1_800_000_000_000)) {
		t.Errorf("notAfter(a deadline) = %v, want the deadline 1800000000000 ms", got)
	}
}

// The deadline sent is the caller's moved by the node's offset, rounded
// down to the millisecond: never later, in the node's clock, than the
// caller's deadline; and never a value the guard reads as "none".
func TestADeadlineIsMovedByTheOffsetAndRoundedDown(t *testing.T) {
	d := time.UnixMilli(1_800_000_000_000).Add(500 * time.Microsecond)
	for _, tc := range []struct {
		off  time.Duration
		want int64
	}{
		{0, 1_800_000_000_000},
		{7 * time.Second, 1_800_000_007_000},
		{-1900 * time.Microsecond, 1_799_999_999_998}, // 998.6 ms: down, not toward zero
		{-time.Duration(d.UnixNano()), 1},             // a node clock near 1970: still a deadline
	} {
		if got := deadlineArg(d, tc.off); got != tc.want {
			t.Errorf("deadlineArg(%v, %v) = %d, want %d", d, tc.off, got, tc.want)
		}
	}
}

// skewedRouter is a router whose every primary's clock reads off from
// this process's, as the router's clock readings (skew.go) would report
// a node on a host with another clock.
type skewedRouter struct {
	*redisroute.Router
	off  time.Duration
	sent [][]any // the commands Exec was given
}

func (s *skewedRouter) ClockOffset(string) time.Duration { return s.off }

func (s *skewedRouter) Exec(ctx context.Context, cmds []redisroute.Cmd) redisroute.Results {
	for _, c := range cmds {
		s.sent = append(s.sent, append([]any(nil), c.Args...))
	}
	return s.Router.Exec(ctx, cmds)
}

// A guarded write's deadline is sent in the clock of the primary it goes
// to: against a primary whose clock is an hour behind this process's, a
// deadline 20 s away is already past in the node's time as this process
// would send it, so only the moved deadline lets the guard judge right;
// here the node's clock is really this process's, so the moved deadline
// is past and the write is refused, which shows the move is made, in the
// right direction, on the real guard. (Sent unmoved, the write went
// through: a node an hour behind would have taken it up to an hour late.)
func TestAGuardedWritesDeadlineIsSentInItsPrimarysClock(t *testing.T) {
	r := onePrimary(t)
	deadline := time.Now().Add(20 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	const key = "apollo:test:{skew}"
	update := newGuardedScript(updateBookingScript)
	for _, tc := range []struct {
		name    string
		off     time.Duration
		refused bool
	}{
		{"same clock", 0, false},
		{"primary 7 s ahead: a later deadline in its time", 7 * time.Second, false},
		{"primary an hour behind: the deadline is past in its time", -time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.Exec(ctx, []redisroute.Cmd{redisroute.Write("HSET", key, "v", 1, "json", "{}")}).Err(); err != nil {
				t.Fatal(err)
			}
			sr := &skewedRouter{Router: r, off: tc.off}
			res := update.exec(ctx, sr, []redisroute.Cmd{update.cmd(key, 1, `{"id":"b"}`)})[0]
			if want := deadline.Add(tc.off).UnixMilli(); len(sr.sent) == 0 || sr.sent[0][4] != want {
				t.Fatalf("sent %v, want the deadline slot at %d", sr.sent, want)
			}
			switch err := storeErr(res.Err); {
			case tc.refused && !errors.Is(err, ErrLate):
				t.Errorf("reply %v, %v; want ErrLate", res.Val, err)
			case !tc.refused && err != nil:
				t.Errorf("reply %v, %v; want it written", res.Val, err)
			}
		})
	}
}
