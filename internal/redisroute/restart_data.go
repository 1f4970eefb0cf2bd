package redisroute

import (
	"strconv"
	"strings"
)

// A primary that crashes and is restarted by its supervisor within the
// cluster's node timeout is never failed over: it is its shard's primary
// again, with whatever its persistence kept, and its replicas copy that in
// a full sync (its replication history is new). Without persistence it
// comes back empty and the shard's bookings are gone, confirmed ones
// included, with no error anywhere (verify --faults primary-restart
// --persistence none). Apollo cannot prevent it, but it must not be
// silent: every node check compares each node's process (run_id) with the
// check before, and a node that was a primary then and is one now, in a
// new process, is judged by what it came back with: kept with an
// append-only file (a process crash loses nothing of it), else by the keys
// it loaded from its snapshot (none without persistence) against the keys
// it had. Not by the keys it has when the check comes: seconds after a
// restart, heartbeats and the like have made many again, and the bookings
// are still gone. The losses are logged as errors and counted (the alert
// ApolloRedisPrimaryRestartedWithoutItsData).

// nodeRun is what a node check learns of the process behind a node.
type nodeRun struct {
	Addr    string
	RunID   string
	Primary bool  // role:master
	Keys    int64 // keys of every database now (INFO keyspace)
	Loading bool  // still loading its data set from disk
	AOF     bool  // aof_enabled: it came back from its append-only file
	// Loaded is rdb_last_load_keys_loaded, the keys its last load from a
	// snapshot brought; -1 when INFO does not say (before Redis 7.0).
	Loaded int64
}

// parseNodeRun reads the text of INFO server, replication, keyspace and
// persistence, in any order. ok is false without a run_id.
func parseNodeRun(addr, info string) (r nodeRun, ok bool) {
	r.Addr, r.Loaded = addr, -1
	infoFields(info, func(k, v string) {
		switch {
		case k == "run_id":
			r.RunID, ok = v, v != ""
		case k == "role":
			r.Primary = v == "master"
		case k == "loading":
			r.Loading = v == "1"
		case k == "aof_enabled":
			r.AOF = v == "1"
		case k == "rdb_last_load_keys_loaded":
			r.Loaded, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(k, "db"):
			// db0:keys=12,expires=3,avg_ttl=0,...
			keys, _, _ := strings.Cut(strings.TrimPrefix(v, "keys="), ",")
			n, _ := strconv.ParseInt(keys, 10, 64)
			r.Keys += n
		}
	})
	return r, ok
}

// restartVerdict is what a node check makes of a node's process, against
// the check before.
type restartVerdict int

const (
	notRestarted      restartVerdict = iota
	restartNotPrimary                // restarted, but a replica before or now: it copies its primary
	restartKept                      // a primary back with its data
	restartLost                      // a primary back with fewer than half its keys
)

// judgeRestart compares now, a node's process loaded (not Loading), with
// last, the same node's previous check (seen false: none). Half is the
// line for a snapshot: keys come and go between two checks (seconds
// apart), while a node that lost its data comes back with none, or with
// an old snapshot's.
func judgeRestart(last nodeRun, seen bool, now nodeRun) restartVerdict {
	back := now.Keys // what it came back with, when INFO does not say
	if now.Loaded >= 0 {
		back = now.Loaded
	}
	switch {
	case !seen || now.RunID == last.RunID:
		return notRestarted
	case !last.Primary || !now.Primary:
		return restartNotPrimary
	case now.AOF || 2*back >= last.Keys:
		return restartKept
	}
	return restartLost
}

// noteRestart says whether the node at addr, a primary that restarted
// since the memory check before (last: that check's process, seen false:
// none), kept its data (noteMemory calls it with every check, whose round
// trip asks for each node's process too).
//
// A node that was a replica at the check before, or is one now, is not
// judged: it copies its primary, whatever it came back with (restart.go
// holds it out of reads until then). Roles are the nodes' own, not the
// slot map's, which may not know yet of a failover.
func (r *Router) noteRestart(addr string, last nodeRun, seen bool, now nodeRun) {
	switch judgeRestart(last, seen, now) {
	case restartLost:
		r.m.primaryRestarts.WithLabelValues("lost").Inc()
		r.log.Error("redis primary restarted without its data: its replicas copy what it came back with, so what its shard held is lost, confirmed bookings included (no persistence, or only an old snapshot); restore the shard from a backup if there is one",
			"node", addr, "keys_before", last.Keys, "keys_loaded", now.Loaded, "keys_now", now.Keys)
	case restartKept:
		r.m.primaryRestarts.WithLabelValues("kept").Inc()
		r.log.Warn("redis primary restarted before a failover, with its data", "node", addr, "aof", now.AOF, "keys_before", last.Keys, "keys_loaded", now.Loaded, "keys_now", now.Keys)
	}
}
