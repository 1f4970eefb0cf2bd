package redisroute

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A replica keeps answering reads with what it has when its replication
// link breaks or falls behind (replica-serve-stale-data is on by default),
// and the cluster keeps listing it. So the router asks every node for
// INFO replication in the background and stops reading from a replica that
// is behind its primary until it catches up. It is not ejected: ejection is
// about a node's health, with caps, and this node is healthy, just stale.
//
// A replica whose primary does not answer is never behind: its link is
// down because the primary is, which is what a failover looks like, and
// its data is the freshest there is.
//
// A replica serves no read before the check has judged it since it joined
// the router or was last re-admitted (awaitCheck): a replica that crashed
// comes back with an old snapshot or nothing and answers PING at once, and
// reads with what it has, until its primary has sent it the data set, which
// takes seconds (repl-diskless-sync-delay is 5 s by default). Its probes
// re-admitted it within ReadmitAfter probes, before the next check could
// see its link down: reads of drivers registered long ago answered "no such
// driver" (TestARestartedReplicaServesNoReadsUntilItHasTheData).

// replication is what INFO replication says about one node.
type replication struct {
	primary  bool            // role:master
	linkDown bool            // a replica's master_link_status:down
	master   string          // a replica's master_host:master_port
	replicas []listedReplica // a primary's slaveN lines
	replid   string          // master_replid: the history the node's data belongs to
	offset   int64           // master_repl_offset: how far into it the node's data is (see proof.go)
	replid2  string          // master_replid2: the history it followed before its last promotion
	offset2  int64           // second_repl_offset: up to where that history is its own
}

// listedReplica is one slaveN line of a primary: a connected replica.
type listedReplica struct {
	addr   string // ip:port, as the primary sees or the replica announces it
	state  string // online once synchronised; wait_bgsave, send_bulk before
	lag    int    // seconds since its last acknowledgement; -1 if not given
	offset int64  // the replication offset it last acknowledged
}

// parseReplication reads the text of INFO replication.
func parseReplication(info string) replication {
	var r replication
	var host, port string
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if !ok {
			continue
		}
		switch {
		case k == "role":
			r.primary = v == "master"
		case k == "master_link_status":
			r.linkDown = v != "up"
		case k == "master_host":
			host = v
		case k == "master_port":
			port = v
		case k == "master_replid":
			r.replid = v
		case k == "master_repl_offset":
			r.offset, _ = strconv.ParseInt(v, 10, 64)
		case k == "master_replid2":
			r.replid2 = v
		case k == "second_repl_offset":
			r.offset2, _ = strconv.ParseInt(v, 10, 64)
		case isSlaveKey(k):
			r.replicas = append(r.replicas, parseListed(v))
		}
	}
	if host != "" && port != "" {
		r.master = net.JoinHostPort(host, port)
	}
	return r
}

// isSlaveKey matches slave0, slave1, ... (not slave_repl_offset and kin).
func isSlaveKey(k string) bool {
	n, ok := strings.CutPrefix(k, "slave")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.Atoi(n)
	return err == nil
}

// parseListed reads "ip=127.0.0.1,port=7001,state=online,offset=56,lag=0".
func parseListed(v string) listedReplica {
	l := listedReplica{lag: -1}
	var ip, port string
	for _, f := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "ip":
			ip = val
		case "port":
			port = val
		case "state":
			l.state = val
		case "lag":
			if n, err := strconv.Atoi(val); err == nil {
				l.lag = n
			}
		case "offset":
			l.offset, _ = strconv.ParseInt(val, 10, 64)
		}
	}
	l.addr = net.JoinHostPort(ip, port)
	return l
}

// verdict is the check's finding on one replica. known is false when
// nothing was learned (the replica did not answer): its mark stays.
type verdict struct {
	known  bool
	behind bool
	reason string
	lag    int  // seconds since the replica's last acknowledgement, as its primary lists it
	listed bool // lag is known: the primary listed the replica
	// unchecked: no check has judged the node since it joined or was
	// re-admitted (awaitCheck). It serves no read, yet it is no sign that
	// its primary is cut off (suspectFallback): nothing is known of it.
	unchecked bool
	at        time.Time
}

// Reasons a replica is behind, or serves reads again.
const (
	behindLinkDown     = "its replication link is down"
	behindNotListed    = "its primary does not list it as a connected replica"
	primaryUnreachable = "its primary is not answering (a failover: its data is the freshest there is)"
	replicaCaughtUp    = "caught up"
	replicaUnchecked   = "not checked since it joined, was re-admitted or restarted (it may be without the data)"
)

// judgeShard decides which replicas of one shard are behind. primary is
// the INFO of the shard's primary (primaryAddr), nil if it did not answer;
// replicas[i] is the INFO of the replica at replicaAddrs[i], nil if it did
// not answer.
//
// A replica the primary lists is judged by its entry (state, lag), unless
// it says itself that it was promoted (the topology is out of date); one
// that says its link is down is behind only if an entry says so (the link
// dropped after the primary answered: an entry in step teaches nothing).
// One the primary does not list is behind only when its own INFO says it
// replicates from that primary and every entry of the list is another
// replica of the shard: an entry no replica matches may be this one under
// another address (NAT, replica-announce-ip, a hostname), and a wrong
// "behind" would move its reads to the primary.
func judgeShard(primaryAddr string, primary *replication, replicaAddrs []string, replicas []*replication, maxLag time.Duration) []verdict {
	out := make([]verdict, len(replicas))
	if primary == nil || !primary.primary {
		for i := range out {
			out[i] = verdict{known: true, reason: primaryUnreachable}
		}
		return out
	}
	listed := make([]int, len(replicas)) // index+1 into primary.replicas; 0: not listed
	accounted := 0
	for k, l := range primary.replicas {
		for i, a := range replicaAddrs {
			if listed[i] == 0 && sameEndpoint(l.addr, a) {
				listed[i] = k + 1
				accounted++
				break
			}
		}
	}
	allAccounted := accounted == len(primary.replicas)
	for i, own := range replicas {
		switch {
		case own == nil && listed[i] != 0:
			// It did not answer, but its primary's word is enough.
			out[i] = judgeListed(primary.replicas[listed[i]-1], maxLag)
		case own == nil:
			// Nothing learned: whether it is stale is unknown, and a replica
			// that does not answer is the health checks' business.
		case own.primary:
			out[i] = verdict{known: true, reason: replicaCaughtUp} // promoted; the topology will follow
		case own.linkDown && listed[i] != 0:
			// Its primary, asked first, listed it: the link dropped between
			// the two answers, most often because the primary died, when
			// this replica's data is the freshest there is. Judged by its
			// entries (a reconnecting replica may have two: a half-open old
			// one and one syncing), as a replica whose link is up is: in
			// step, nothing is learned and the mark stays. A later check
			// finds a dead primary unreachable, and a live one lists the
			// replica lagging (it acknowledges nothing while its link is
			// down: MaxReplicaLag plus Redis's whole-second rounding) or
			// not at all.
			if v, ok := worstEntry(primary.replicas, replicaAddrs[i], maxLag); ok {
				out[i] = v
			}
		case own.linkDown:
			out[i] = verdict{known: true, behind: true, reason: behindLinkDown}
		case listed[i] != 0:
			out[i] = judgeListed(primary.replicas[listed[i]-1], maxLag)
		case allAccounted && sameEndpoint(own.master, primaryAddr):
			out[i] = verdict{known: true, behind: true, reason: behindNotListed}
		default:
			// Unlisted, but either it follows another node (the topology is
			// out of date) or the list has an entry that may be this one.
			out[i] = verdict{known: true, reason: replicaCaughtUp}
		}
	}
	return out
}

// worstEntry is the verdict of the first of entries for addr that judges
// it behind; false if none does.
func worstEntry(entries []listedReplica, addr string, maxLag time.Duration) (verdict, bool) {
	for _, l := range entries {
		if !sameEndpoint(l.addr, addr) {
			continue
		}
		if v := judgeListed(l, maxLag); v.behind {
			return v, true
		}
	}
	return verdict{}, false
}

// judgeListed judges a replica its primary lists.
func judgeListed(l listedReplica, maxLag time.Duration) verdict {
	if l.state != "online" {
		return verdict{known: true, behind: true, listed: true, lag: l.lag, reason: "its primary lists it as " + l.state + ", not online"}
	}
	if lag := time.Duration(l.lag) * time.Second; lag > maxLag {
		return verdict{known: true, behind: true, listed: true, lag: l.lag, reason: "its last acknowledgement is " + lag.String() + " old (max " + maxLag.String() + ")"}
	}
	return verdict{known: true, listed: true, lag: l.lag, reason: replicaCaughtUp}
}

// sameEndpoint compares host:port addresses: same port, and the same host
// by name (case-insensitive) or by IP (an IPv4-mapped IPv6 address is its
// IPv4 address; all loopback addresses are one host). A name is not
// resolved: a hostname matches only the same name.
func sameEndpoint(a, b string) bool { return endpointsMatch(a, b, true) }

// exactEndpoint is sameEndpoint without its allowance for aliases (any two
// loopback addresses are one host there): a write's proof (proof.go) must
// not take one node's acknowledgement for another's. A node listed under
// an alias is asked itself instead.
func exactEndpoint(a, b string) bool { return endpointsMatch(a, b, false) }

// endpointsMatch is sameEndpoint, with loopback addresses one host only if
// loopbackIsOne.
func endpointsMatch(a, b string, loopbackIsOne bool) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	if strings.EqualFold(ha, hb) {
		return true
	}
	ia, errA := netip.ParseAddr(ha)
	ib, errB := netip.ParseAddr(hb)
	if errA != nil || errB != nil {
		return false
	}
	ia, ib = ia.Unmap(), ib.Unmap()
	return ia == ib || loopbackIsOne && ia.IsLoopback() && ib.IsLoopback()
}

// checkReplication, every ReplicaCheckInterval and at once when a node
// waits for one (checkNow), asks every node of the topology for INFO
// replication, and INFO server for its run_id (see restart.go), through
// its probe pool: the primaries, then the others, each bounded by the
// interval, so that hung nodes delay the next check by two intervals at
// most (vouched allows for it). Then it judges each shard. Its verdicts,
// and awaitCheck's hold, are the only writers of the nodes' behind marks.
//
// The primaries first: a replica that answers, then dies before its
// primary's list is taken, was judged "not listed", behind, while not yet
// ejected, and confirmed the fallback reads of a shard whose replicas had
// all died, which then failed (TestPrimaryFallbackIsCappedAndVisible, 1
// run in 15). Asked after the list, a dead replica does not answer, and
// one listed then is judged by its entry. The reverse race, a link that
// drops between the two answers, is judgeShard's.
func (r *Router) checkReplication() {
	t := r.topo.Load()
	asked := r.clock.Now()
	primaries, others := t.primariesAndOthers()
	ans := newReplicationAnswers()
	r.askReplication(ans, primaries, asked)
	r.askReplication(ans, others, asked)
	r.judgeReplication(t, ans, asked)
}

// replicationAnswers is what one check learned: each node's INFO
// replication, or what kept it.
type replicationAnswers struct {
	mu     sync.Mutex
	infos  map[*node]*replication
	failed map[*node]error
}

func newReplicationAnswers() *replicationAnswers {
	return &replicationAnswers{infos: map[*node]*replication{}, failed: map[*node]error{}}
}

// primariesAndOthers splits t's nodes into the shards' primaries and the
// rest. The rest is every other node, not the shards' replica lists: the
// same set today, and still right if a slot map caught mid-failover
// lists one node in two roles.
func (t *topology) primariesAndOthers() (primaries, others []*node) {
	primaries = make([]*node, 0, len(t.shards))
	for _, s := range t.shards {
		primaries = append(primaries, s.primary)
	}
	others = slices.DeleteFunc(slices.Clone(t.nodes), func(n *node) bool { return slices.Contains(primaries, n) })
	return primaries, others
}

// askReplication asks nodes at once for INFO replication and INFO server,
// each bounded by the check interval, and records the answers in ans.
func (r *Router) askReplication(ans *replicationAnswers, nodes []*node, asked time.Time) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ReplicaCheckInterval)
			pipe := n.probe.Pipeline()
			repl, server := pipe.Info(ctx, "replication"), pipe.Info(ctx, "server")
			_, _ = pipe.Exec(ctx)
			cancel()
			text, err := repl.Result()
			if server.Err() == nil {
				r.sawRunID(n, parseRunID(server.Val()), asked)
			}
			ans.mu.Lock()
			defer ans.mu.Unlock()
			if err != nil {
				ans.failed[n] = err
				return
			}
			rep := parseReplication(text)
			ans.infos[n] = &rep
		}()
	}
	wg.Wait()
}

// judgeReplication judges each shard of t from ans, asked at asked.
func (r *Router) judgeReplication(t *topology, ans *replicationAnswers, asked time.Time) {
	infos, failed := ans.infos, ans.failed
	now := r.clock.Now()
	for _, s := range t.shards {
		p := infos[s.primary]
		if p != nil && p.primary {
			// A node marked while a replica may be the primary now.
			r.judged(s.primary, verdict{known: true, reason: "it is the primary"}, asked)
		}
		// A primary that serves requests but did not answer this INFO in
		// time (forking for a full sync is slow) is no failover: whether
		// its replicas are behind is unknown, and their marks stay. One
		// that refuses connections is down.
		unknown := false
		if !s.primary.healthy() || r.hopeless(s.primary, now) {
			p = nil // a failover: see judgeShard
		} else if p == nil && !refusesConnections(failed[s.primary]) {
			unknown = true
		}
		addrs := make([]string, len(s.replicas))
		reps := make([]*replication, len(s.replicas))
		for i, x := range s.replicas {
			addrs[i], reps[i] = x.addr, infos[x]
			if reps[i] != nil && reps[i].primary {
				// Promoted while the shard's old primary may still answer
				// (cut off from the cluster, not from us): it would take
				// writes and answer reads the failover undoes until the next
				// periodic refresh. The topology follows now.
				r.requestRefresh("a replica reports it is a primary")
			}
		}
		if unknown {
			continue
		}
		for i, v := range judgeShard(s.primary.addr, p, addrs, reps, r.cfg.MaxReplicaLag) {
			r.judged(s.replicas[i], v, asked)
		}
	}
}

// judged records a verdict on replica n from INFO asked for at asked,
// unless n was re-admitted since: what it said before may be from before a
// restart. Under ejectMu, which re-admission holds, so that a re-admission
// cannot fall between the comparison and the record.
func (r *Router) judged(n *node, v verdict, asked time.Time) {
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	if n.joined.After(asked) {
		return
	}
	r.setBehind(n, v)
}

// awaitCheck holds n out of reads until the next check judges it: it has
// just joined, or been re-admitted after it failed, and may have restarted
// without the data. Under ejectMu, or before n is published. Not under
// legacy-2019, which runs no checks to judge it. A replica found behind
// keeps that verdict: it is held out of reads as well, and it stays a sign
// that its primary may be cut off.
func (r *Router) awaitCheck(n *node, now time.Time) {
	n.joined = now
	if r.cfg.Policy == Legacy2019 || n.fellBehind() {
		return
	}
	n.repl.Store(&verdict{known: true, behind: true, unchecked: true, reason: replicaUnchecked, lag: -1, at: now})
	n.behind.Store(true)
	select { // so that it serves again within a round trip, not a tick
	case r.checkNow <- struct{}{}:
	default: // one is asked for already
	}
}

// fellBehind reports a replica the check found behind its primary: a
// replica not yet checked is held out of reads, but proves nothing.
func (n *node) fellBehind() bool {
	v := n.repl.Load()
	return v != nil && v.behind && !v.unchecked
}

// setBehind records a verdict on n, and logs and exports a change.
func (r *Router) setBehind(n *node, v verdict) {
	if !v.known {
		return
	}
	if !v.listed {
		v.lag = -1
	}
	v.at = r.clock.Now()
	prev := n.repl.Swap(&v)
	// Exported on every verdict, so a replica in step reads 0, not absent.
	behind := 0.0
	if v.behind {
		behind = 1
	}
	r.m.replicaBehind.WithLabelValues(n.addr).Set(behind)
	if n.behind.Swap(v.behind) == v.behind {
		return
	}
	if v.behind {
		r.log.Warn("redis replica behind its primary: no reads until it catches up", "node", n.addr, "reason", v.reason)
		return
	}
	if prev != nil && prev.unchecked {
		return // its first verdict since it (re)joined: nothing to tell
	}
	r.log.Info("redis replica serves reads again", "node", n.addr, "reason", v.reason)
}
