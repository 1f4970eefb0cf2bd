package redisroute

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The INFO replication shapes below are those of redis-server 7.0 in a
// local cluster (primary 127.0.0.1:7000, replicas :7001 and :7002).

// primaryINFO is a primary's INFO replication listing the given slaveN
// values ("ip=127.0.0.1,port=7001,state=online,offset=182,lag=0").
func primaryINFO(listed ...string) string {
	lines := []string{"# Replication", "role:master", fmt.Sprintf("connected_slaves:%d", len(listed))}
	for i, l := range listed {
		lines = append(lines, fmt.Sprintf("slave%d:%s", i, l))
	}
	lines = append(lines, "master_failover_state:no-failover", "master_replid:5c757ed912bcd3aa01d6738cf7c3df8a59470729",
		"master_replid2:0000000000000000000000000000000000000000", "master_repl_offset:182", "second_repl_offset:-1",
		"repl_backlog_active:1", "repl_backlog_size:1048576", "repl_backlog_first_byte_offset:1", "repl_backlog_histlen:182", "")
	return strings.Join(lines, "\r\n")
}

// replicaINFO is a replica's INFO replication: following master
// (host:port), its link up or down.
func replicaINFO(master string, up bool) string {
	host, port, _ := strings.Cut(master, ":")
	lines := []string{"# Replication", "role:slave", "master_host:" + host, "master_port:" + port}
	if up {
		lines = append(lines, "master_link_status:up", "master_last_io_seconds_ago:0", "master_sync_in_progress:0",
			"slave_read_repl_offset:182", "slave_repl_offset:182")
	} else {
		lines = append(lines, "master_link_status:down", "master_last_io_seconds_ago:-1", "master_sync_in_progress:0",
			"slave_read_repl_offset:70", "slave_repl_offset:70", "master_link_down_since_seconds:3")
	}
	lines = append(lines, "slave_priority:100", "slave_read_only:1", "replica_announced:1", "connected_slaves:0",
		"master_failover_state:no-failover", "master_replid:5c757ed912bcd3aa01d6738cf7c3df8a59470729",
		"master_replid2:0000000000000000000000000000000000000000", "master_repl_offset:182", "second_repl_offset:-1",
		"repl_backlog_active:1", "repl_backlog_size:1048576", "repl_backlog_first_byte_offset:1", "repl_backlog_histlen:182", "")
	return strings.Join(lines, "\r\n")
}

func listed(port int, state string, lag int) string {
	return fmt.Sprintf("ip=127.0.0.1,port=%d,state=%s,offset=182,lag=%d", port, state, lag)
}

func TestJudgeShard(t *testing.T) {
	const p, a, b = "127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"
	bothOnline := primaryINFO(listed(7001, "online", 0), listed(7002, "online", 0))
	onlyB := primaryINFO(listed(7002, "online", 0))
	// want per replica (a, b): "ok", "behind", or "?" (nothing learned: the mark stays).
	tests := []struct {
		name    string
		primary string    // "": did not answer
		own     [2]string // "": did not answer
		want    [2]string
	}{
		{"online with lag 0", bothOnline, [2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"ok", "ok"}},
		{"lag at the bound", primaryINFO(listed(7001, "online", 2), listed(7002, "online", 0)),
			[2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"ok", "ok"}},
		{"lag above the bound", primaryINFO(listed(7001, "online", 3), listed(7002, "online", 0)),
			[2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"still synchronising", primaryINFO(listed(7001, "wait_bgsave", 0), listed(7002, "online", 0)),
			[2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"missing from the primary's list", onlyB, [2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"no replica connected", primaryINFO(), [2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"behind", "behind"}},
		// The primary answers first: the link dropped since (the primary
		// died, most often). The next check tells.
		{"own link down, primary still lists it in step", bothOnline, [2]string{replicaINFO(p, false), replicaINFO(p, true)}, [2]string{"?", "ok"}},
		{"own link down, primary lists it lagging", primaryINFO(listed(7001, "online", 3), listed(7002, "online", 0)),
			[2]string{replicaINFO(p, false), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"own link down, primary lists it synchronising", primaryINFO(listed(7001, "send_bulk", 0), listed(7002, "online", 0)),
			[2]string{replicaINFO(p, false), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"own link down, an old entry in step and a new one synchronising", primaryINFO(listed(7001, "online", 0), listed(7002, "online", 0), listed(7001, "wait_bgsave", 0)),
			[2]string{replicaINFO(p, false), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"own link down, primary dropped it", onlyB, [2]string{replicaINFO(p, false), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"primary unreachable", "", [2]string{replicaINFO(p, false), replicaINFO(p, false)}, [2]string{"ok", "ok"}},
		{"primary demoted (topology out of date)", replicaINFO(a, false), [2]string{replicaINFO(p, false), replicaINFO(a, true)}, [2]string{"ok", "ok"}},
		{"replica promoted (topology out of date)", onlyB, [2]string{primaryINFO(listed(7002, "online", 0)), replicaINFO(p, true)}, [2]string{"ok", "ok"}},
		{"replica follows another node", onlyB, [2]string{replicaINFO("127.0.0.1:7009", true), replicaINFO(p, true)}, [2]string{"ok", "ok"}},
		{"replica silent, primary lists it lagging", primaryINFO(listed(7001, "online", 9), listed(7002, "online", 0)),
			[2]string{"", replicaINFO(p, true)}, [2]string{"behind", "ok"}},
		{"replica silent and not listed", onlyB, [2]string{"", replicaINFO(p, true)}, [2]string{"?", "ok"}},
		{"primary lists an address no replica has (NAT)", primaryINFO("ip=172.17.0.3,port=7001,state=online,offset=182,lag=0", listed(7002, "online", 0)),
			[2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"ok", "ok"}},
		{"primary lists an IPv4-mapped address", primaryINFO("ip=::ffff:127.0.0.1,port=7001,state=online,offset=182,lag=5", listed(7002, "online", 0)),
			[2]string{replicaINFO(p, true), replicaINFO(p, true)}, [2]string{"behind", "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var primary *replication
			if tt.primary != "" {
				x := parseReplication(tt.primary)
				primary = &x
			}
			var own []*replication
			for _, s := range tt.own {
				var x *replication
				if s != "" {
					r := parseReplication(s)
					x = &r
				}
				own = append(own, x)
			}
			got := judgeShard(p, primary, []string{a, b}, own, 2*time.Second)
			for i, v := range got {
				s := "?"
				switch {
				case v.known && v.behind:
					s = "behind"
				case v.known:
					s = "ok"
				}
				if s != tt.want[i] {
					t.Errorf("replica %d: %s (%q), want %s", i, s, v.reason, tt.want[i])
				}
			}
		})
	}
}

func TestSameEndpoint(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:7001", "127.0.0.1:7001", true},
		{"127.0.0.1:7001", "127.0.0.1:7002", false},
		{"[::ffff:127.0.0.1]:7001", "127.0.0.1:7001", true},
		{"[::1]:7001", "127.0.0.1:7001", true}, // loopback is loopback
		{"10.0.0.5:6379", "10.0.0.6:6379", false},
		{"Redis-1.internal:6379", "redis-1.internal:6379", true},
		{"redis-1.internal:6379", "10.0.0.5:6379", false}, // names are not resolved
		{"10.0.0.5", "10.0.0.5:6379", false},
	}
	for _, tt := range tests {
		if got := sameEndpoint(tt.a, tt.b); got != tt.want {
			t.Errorf("sameEndpoint(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// A behind replica serves no read: not as the preferred node, not as a
// fallback or hedge target, not as the last resort. A node marked behind
// that is now its shard's primary is not avoided.
func TestPickReadSkipsABehindReplica(t *testing.T) {
	tests := []struct {
		name     string
		policy   Policy
		behind   []string
		ejected  []string
		hopeless []string // silent for FailFastAfter with requests waiting
		want     string   // node, or "error"
	}{
		{"other replica", ReplicaPreferred, []string{"a:1"}, nil, nil, "b:1"},
		{"both behind: the primary", ReplicaPreferred, []string{"a:1", "b:1"}, nil, nil, "p:1"},
		{"nearest", Nearest, []string{"a:1", "b:1"}, nil, nil, "p:1"},
		{"primary policy's fallback", Primary, []string{"a:1"}, []string{"p:1"}, nil, "b:1"},
		{"not the last resort", ReplicaPreferred, []string{"a:1"}, []string{"a:1"}, []string{"p:1", "b:1"}, "error"},
		{"the last resort when not behind", ReplicaPreferred, nil, []string{"a:1"}, []string{"p:1", "b:1"}, "a:1"},
		{"a marked primary is still the primary", Primary, []string{"p:1"}, nil, nil, "p:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)), func(cfg *Config) { cfg.Policy = tt.policy })
			for _, a := range tt.behind {
				c.r.setBehind(c.nodes[a], verdict{known: true, behind: true, reason: behindLinkDown})
			}
			for _, a := range tt.ejected {
				c.nodes[a].ejected.Store(true)
			}
			for _, a := range tt.hopeless {
				c.nodes[a].inflight.Store(1)
				c.nodes[a].lastProgress.Store(c.clock.Now().Add(-2 * c.r.cfg.FailFastAfter).UnixNano())
			}
			s := c.r.topo.Load().shards[0]
			for i := 0; i < 4; i++ { // every round-robin start
				n, _, err := c.r.pickRead(s, 1, nil)
				got := "error"
				if err == nil {
					got = n.addr
				}
				if got != tt.want {
					t.Fatalf("pick %d: %s (%v), want %s", i, got, err, tt.want)
				}
			}
		})
	}
}

// The check asks each node through its probe pool and marks, exports and
// logs each change; a primary that stops answering clears the marks.
func TestCheckReplicationMarksAndClears(t *testing.T) {
	var pInfo, aInfo, bInfo atomic.Pointer[string]
	serve := func(info *atomic.Pointer[string]) func([]string) string {
		return func(cmd []string) string {
			switch strings.ToUpper(cmd[0]) {
			case "HELLO":
				return "-ERR unknown command 'HELLO'" // as Redis 5 does: go-redis goes on with RESP2
			case "INFO":
			default:
				return "+OK"
			}
			return bulkOrError(*info.Load())
		}
	}
	pf, af, bf := startFakeRESP(t, serve(&pInfo)), startFakeRESP(t, serve(&aInfo)), startFakeRESP(t, serve(&bInfo))
	p, a, b := pf.addr(), af.addr(), bf.addr()
	port := func(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
	set := func(x *atomic.Pointer[string], s string) { x.Store(&s) }
	onlyB := primaryINFO("ip=127.0.0.1,port=" + port(b) + ",state=online,offset=182,lag=0")
	both := primaryINFO("ip=127.0.0.1,port="+port(a)+",state=online,offset=182,lag=0", "ip=127.0.0.1,port="+port(b)+",state=online,offset=182,lag=0")
	bothLagging := primaryINFO("ip=127.0.0.1,port="+port(a)+",state=online,offset=182,lag=3", "ip=127.0.0.1,port="+port(b)+",state=online,offset=182,lag=0")

	c := newFakeCluster(t, [][]*fakeNode{{newFakeNode(p, answer(p, 2)), newFakeNode(a, answer(a, 2)), newFakeNode(b, answer(b, 2))}})
	probeFakes(t, c)
	var logs bytes.Buffer
	c.r.log = slog.New(slog.NewTextHandler(&logs, nil))
	behind := func(addr string) float64 { return testutil.ToFloat64(c.r.m.replicaBehind.WithLabelValues(addr)) }

	steps := []struct {
		name         string
		p, a, b      string
		primaryOut   bool // the primary is ejected: it failed requests
		wantA, wantB bool
		wantLog      string // "" for no log line
	}{
		{"all in sync", both, replicaINFO(p, true), replicaINFO(p, true), false, false, false, ""},
		{"a's link is down", onlyB, replicaINFO(p, false), replicaINFO(p, true), false, true, false, "level=WARN msg=\"redis replica behind its primary: no reads until it catches up\" node=" + a + " reason=\"" + behindLinkDown},
		{"still down: no new line", onlyB, replicaINFO(p, false), replicaINFO(p, true), false, true, false, ""},
		// A primary that serves requests and fails its INFO (slow, forking
		// for a full sync) says nothing of its replicas: no failover.
		{"the primary's INFO fails, requests do not: marks stay", "-ERR slow", replicaINFO(p, false), replicaINFO(p, false), false, true, false, ""},
		{"the primary stops answering", "-ERR hung", replicaINFO(p, false), replicaINFO(p, false), true, false, false, "level=INFO msg=\"redis replica serves reads again\" node=" + a + " reason=\"" + primaryUnreachable},
		{"the primary is back, a still down", onlyB, replicaINFO(p, false), replicaINFO(p, true), false, true, false, "level=WARN"},
		{"a caught up", both, replicaINFO(p, true), replicaINFO(p, true), false, false, false, "level=INFO msg=\"redis replica serves reads again\" node=" + a + " reason=\"" + replicaCaughtUp},
		// Its link dropped after its primary answered: nothing is learned.
		{"a's link drops between the asks", both, replicaINFO(p, false), replicaINFO(p, true), false, false, false, ""},
		{"its primary lists it lagging since", bothLagging, replicaINFO(p, false), replicaINFO(p, true), false, true, false, "level=WARN"},
	}
	for _, st := range steps {
		set(&pInfo, st.p)
		set(&aInfo, st.a)
		set(&bInfo, st.b)
		c.nodes[p].ejected.Store(st.primaryOut)
		logs.Reset()
		c.r.checkReplication()
		gotA, gotB := c.nodes[a].behind.Load(), c.nodes[b].behind.Load()
		if gotA != st.wantA || gotB != st.wantB {
			t.Errorf("%s: behind a=%v b=%v, want %v %v", st.name, gotA, gotB, st.wantA, st.wantB)
		}
		if want := map[bool]float64{true: 1}[st.wantA]; behind(a) != want {
			t.Errorf("%s: apollo_redis_replica_behind{node=a} = %v, want %v", st.name, behind(a), want)
		}
		if got := logs.String(); st.wantLog == "" && got != "" || !strings.Contains(got, st.wantLog) {
			t.Errorf("%s: logged %q, want %q", st.name, got, st.wantLog)
		}
	}
}

// A replica serves reads only once a check has judged it since it joined
// or was re-admitted: a verdict from INFO asked before does not count, a
// replica not yet judged vouches for nothing and is no sign that its
// primary is cut off, and one found behind stays so across a re-admission.
func TestAReplicaServesReadsOnlyOnceJudgedSinceItJoined(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
	r, a, b := c.r, c.nodes["a:1"], c.nodes["b:1"]
	s := r.topo.Load().shards[0]
	caughtUp := verdict{known: true, reason: replicaCaughtUp}
	t0 := r.clock.Now()
	r.judged(a, caughtUp, t0)
	r.judged(b, caughtUp, t0)

	readmitted := t0.Add(time.Second)
	r.ejectMu.Lock()
	r.awaitCheck(a, readmitted)
	r.ejectMu.Unlock()
	if !a.behind.Load() || a.fellBehind() || r.vouched(a, readmitted) {
		t.Errorf("re-admitted: behind %v, fell behind %v, vouched %v; want held out of reads, no sign, vouching for nothing", a.behind.Load(), a.fellBehind(), r.vouched(a, readmitted))
	}
	if n, _, err := r.pickRead(s, 1, nil); err != nil || n != b {
		t.Errorf("read while a is not judged went to %v (%v), want b", n, err)
	}
	if got := r.suspectFallback(s, s.primary); got != 0 {
		t.Errorf("a fallback to the primary while a is not judged asks %d confirmations, want 0", got)
	}
	r.judged(a, caughtUp, readmitted.Add(-time.Millisecond)) // INFO asked before the re-admission
	if !a.behind.Load() {
		t.Error("a verdict from INFO asked before the re-admission was applied")
	}
	r.judged(a, verdict{}, readmitted) // nothing learned (judgeShard's "?"): a link that dropped between the asks
	if !a.behind.Load() {
		t.Error("a check that learned nothing of a re-admitted replica let it serve reads")
	}
	r.judged(a, caughtUp, readmitted)
	if a.behind.Load() {
		t.Error("a verdict from INFO asked at the re-admission was not applied")
	}

	linkDown := verdict{known: true, behind: true, reason: behindLinkDown}
	r.judged(a, linkDown, readmitted)
	r.ejectMu.Lock()
	r.awaitCheck(a, readmitted.Add(time.Second))
	r.ejectMu.Unlock()
	if !a.fellBehind() || a.repl.Load().reason != behindLinkDown {
		t.Errorf("a replica found behind, re-admitted: %+v, want its verdict kept", a.repl.Load())
	}
}

// Under legacy-2019 nothing checks replication, so nothing waits for it.
func TestLegacyRoutingHoldsNoReplicaForACheck(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)), func(cfg *Config) { cfg.Policy = Legacy2019 })
	a := c.nodes["a:1"]
	c.r.awaitCheck(a, c.r.clock.Now())
	if a.behind.Load() {
		t.Error("legacy-2019: a re-admitted replica is held out of reads, and no check would ever release it")
	}
}

// A node the slot map did not have is held until judged; one it had is
// left alone.
func TestANodeNewToTheSlotMapIsHeldUntilJudged(t *testing.T) {
	c := newFakeCluster(t, shard3(answer("p:1", 2), answer("a:1", 2), answer("b:1", 2)))
	old := c.r.topo.Load()
	back := &node{addr: "c:1"}
	t2 := &topology{nodes: append(slices.Clone(old.nodes), back)}
	c.r.awaitJoined(old, t2)
	if !back.behind.Load() {
		t.Error("a node new to the slot map serves reads before it is judged")
	}
	for _, n := range old.nodes {
		if n.behind.Load() {
			t.Errorf("%s, in the slot map before, is held", n.addr)
		}
	}
}
