package redisroute

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// timeReply is TIME's answer for t: seconds and microseconds, as bulk strings.
func timeReply(t time.Time) string {
	sec, usec := strconv.FormatInt(t.Unix(), 10), strconv.Itoa(t.Nanosecond()/1000)
	return fmt.Sprintf("*2\r\n$%d\r\n%s\r\n$%d\r\n%s", len(sec), sec, len(usec), usec)
}

// A node whose clock is ahead or behind is read as such: each TIME round
// trip bounds the node's clock to the middle of the trip ± half of it, and
// the tightest of the trips is the reading kept. This process's clock and
// the node's are scripted, so nothing here depends on how fast this
// machine is.
func TestANodesClockIsReadFromItsTightestRoundTrip(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Per round trip: sent at, answered at (this process's clock), and
	// where in between the node read its clock.
	trips := []struct{ sent, answered, read time.Duration }{
		{0, ms(100), ms(80)},        // slow: the node read its clock late in it
		{ms(200), ms(210), ms(204)}, // the tightest
		{ms(300), ms(340), ms(320)},
	}
	for _, skew := range []time.Duration{0, 7 * time.Second, -90 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			var replies atomic.Int32
			f := startFakeRESP(t, func(cmd []string) string {
				if !strings.EqualFold(cmd[0], "time") {
					return "-ERR unknown command"
				}
				trip := trips[replies.Add(1)-1]
				return timeReply(base.Add(trip.read + skew))
			})
			var readings []time.Time
			for _, trip := range trips {
				readings = append(readings, base.Add(trip.sent), base.Add(trip.answered))
			}
			now := func() time.Time { r := readings[0]; readings = readings[1:]; return r }
			c := redis.NewClient(&redis.Options{Addr: f.addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			got, err := ReadClock(context.Background(), c, now)
			if err != nil {
				t.Fatal(err)
			}
			// The second trip: middle at 205 ms, the node read 204 ms.
			want := NodeClock{Offset: skew - ms(1), Uncertainty: ms(5), At: base.Add(ms(210))}
			if got != want || len(readings) != 0 {
				t.Errorf("read %+v (%d clock readings left), want %+v", got, len(readings), want)
			}
			if e := got.Earliest(); e > skew {
				t.Errorf("earliest %v is later than the node's clock %v: a deadline moved by it could be late", e, skew)
			}
		})
	}
}

func TestAClockIsSkewedOnlyWhenItsUncertaintyCannotExplainTheOffset(t *testing.T) {
	for _, tc := range []struct {
		offset, uncertainty time.Duration
		want                bool
	}{
		{0, time.Millisecond, false},
		{600 * time.Millisecond, time.Millisecond, true},
		{-600 * time.Millisecond, time.Millisecond, true},
		{600 * time.Millisecond, 200 * time.Millisecond, false},
		{-600 * time.Millisecond, 200 * time.Millisecond, false},
		{ClockSkewWarn, 0, false},
	} {
		c := NodeClock{Offset: tc.offset, Uncertainty: tc.uncertainty}
		if got := c.Skewed(ClockSkewWarn); got != tc.want {
			t.Errorf("%v ± %v: skewed %v, want %v", tc.offset, tc.uncertainty, got, tc.want)
		}
	}
}

// The whole path, with a primary on a host whose clock is off: the
// background check reads it, exports it, logs it, and the primary's keys
// get its offset (never more); a step back is taken at the next reading,
// a slow reading that agrees with the last one does not replace it, one
// that contradicts it does, and an old reading is not used.
func TestAPrimarysClockOffsetReachesItsKeys(t *testing.T) {
	var skew atomic.Int64 // ns the primary's clock is ahead
	var slow atomic.Bool
	var refuse atomic.Bool
	serve := func(skewed bool) func([]string) string {
		return func(cmd []string) string {
			switch strings.ToUpper(cmd[0]) {
			case "TIME":
			case "HELLO":
				return "-ERR unknown command 'HELLO'"
			default:
				return "+OK"
			}
			if !skewed {
				return timeReply(time.Now())
			}
			if refuse.Load() {
				return "-ERR TIME refused"
			}
			if slow.Load() {
				time.Sleep(300 * time.Millisecond) // a round trip too long to be precise
			}
			return timeReply(time.Now().Add(time.Duration(skew.Load())))
		}
	}
	pf, rf := startFakeRESP(t, serve(true)), startFakeRESP(t, serve(false))
	p, rep := pf.addr(), rf.addr()
	c := newFakeCluster(t, [][]*fakeNode{{newFakeNode(p, answer(p, 1)), newFakeNode(rep, answer(rep, 1))}})
	probeFakes(t, c)
	var logs bytes.Buffer
	c.r.log = slog.New(slog.NewTextHandler(&logs, nil))
	key := c.key(0)
	// A key's offset is its primary's earliest: at most its clock's lead,
	// and less by at most a round trip (a check gives up after 1 s).
	within := func(step string, lead time.Duration) {
		t.Helper()
		if off := c.r.ClockOffset(key); off > lead || off < lead-clockCheckTimeout {
			t.Errorf("%s: ClockOffset = %v, want in [%v, %v]", step, off, lead-clockCheckTimeout, lead)
		}
	}

	skew.Store(int64(7 * time.Second))
	c.r.checkClocks()
	within("7 s ahead", 7*time.Second)
	if g := testutil.ToFloat64(c.r.m.clockOffset.WithLabelValues(p)); g < 6 || g > 8 {
		t.Errorf("exported offset %v s, want about 7", g)
	}
	if !strings.Contains(logs.String(), `msg="redis node's clock differs from this instance's`) || !strings.Contains(logs.String(), "node="+p) {
		t.Errorf("no line names the skewed primary:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "node="+rep) {
		t.Errorf("the replica, on this clock, was logged:\n%s", logs.String())
	}

	logs.Reset()
	skew.Store(0)
	c.r.checkClocks()
	within("stepped back", 0)
	if !strings.Contains(logs.String(), "agrees with this instance's again") {
		t.Errorf("no line says the clock agrees again:\n%s", logs.String())
	}

	kept := c.nodes[p].clock.Load()
	slow.Store(true)
	c.r.checkClocks()
	if now := c.nodes[p].clock.Load(); now != kept {
		t.Errorf("a slow reading that agrees replaced a precise one: %+v → %+v", kept, now)
	}
	skew.Store(int64(-5 * time.Second))
	c.r.checkClocks()
	within("stepped 5 s back, read slowly", -5*time.Second)
	slow.Store(false)

	refuse.Store(true)
	c.r.checkClocks()
	within("TIME refused: the last reading stands", -5*time.Second)
	old := *c.nodes[p].clock.Load()
	old.At = time.Now().Add(-maxClockAge - time.Second)
	c.nodes[p].clock.Store(&old)
	if off := c.r.ClockOffset(key); off != 0 {
		t.Errorf("a reading %v old moves deadlines by %v, want not used", maxClockAge+time.Second, off)
	}
}

// The cluster's time is the middle of the nodes' offsets: a minority of
// nodes whose clocks are off does not move it.
func TestTheClustersTimeIsTheMedianOfItsNodes(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		offs []time.Duration
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{[]time.Duration{3 * s}, 3 * s, true},
		{[]time.Duration{-3 * s, -3 * s, 40 * s}, -3 * s, true},
		{[]time.Duration{40 * s, 1 * s, -1 * s, 2 * s}, 1500 * time.Millisecond, true},
		{[]time.Duration{-3 * s, -3 * s, -3 * s, 3600 * s, -3600 * s, -3 * s}, -3 * s, true},
	} {
		if got, ok := median(slices.Clone(tc.offs)); got != tc.want || ok != tc.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", tc.offs, got, ok, tc.want, tc.ok)
		}
	}
}

// The cluster's time is taken only from precise, fresh readings of a
// majority of the nodes, and kept while new readings agree with it within
// their uncertainty, so that it does not step by reading noise.
func TestTheClustersTimeComesFromAMajorityOfPreciseReadings(t *testing.T) {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{m: m, log: slog.New(slog.DiscardHandler), steady: newSteady(time.Now)}
	s, ms := time.Second, time.Millisecond
	read := func(off, unc time.Duration) *NodeClock {
		return &NodeClock{Offset: off, Uncertainty: unc, At: time.Now()}
	}
	nodes := func(clocks ...*NodeClock) map[string]*node {
		in := map[string]*node{}
		for i, c := range clocks {
			n := &node{addr: fmt.Sprint("n", i)}
			if c != nil {
				n.clock.Store(c)
			}
			in[n.addr] = n
		}
		return in
	}
	stale := read(-3*s, ms)
	stale.At = time.Now().Add(-maxClockAge - s)
	for _, step := range []struct {
		name  string
		in    map[string]*node
		known bool
		want  time.Duration
	}{
		{"half the nodes read: not known", nodes(read(-3*s, ms), read(-3*s, ms), nil, nil), false, 0},
		{"imprecise and stale readings do not count", nodes(read(-3*s, ms), read(-3*s, 300*ms), stale, nil), false, 0},
		{"a majority: their median", nodes(read(-3*s, 2*ms), read(-3*s-ms, 2*ms), read(40*s, ms), nil), true, -3 * s},
		{"a new median within the readings' uncertainty: kept", nodes(read(-3*s+ms, 2*ms), read(-3*s+ms, 2*ms), read(-3*s+ms, 2*ms)), true, -3 * s},
		{"a new median beyond it: taken", nodes(read(-2*s, 2*ms), read(-2*s, 2*ms), read(-2*s, 2*ms)), true, -2 * s},
		{"then too few: the last stands", nodes(read(5*s, ms), nil, nil), true, -2 * s},
	} {
		known := r.setClusterOffset(step.in)
		if off := time.Duration(r.clusterOffset.Load()); known != step.known || off != step.want {
			t.Errorf("%s: known %v, offset %v; want %v, %v", step.name, known, off, step.known, step.want)
		}
	}
}
