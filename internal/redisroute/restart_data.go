package redisroute

import (
	"context"
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
// silent: every node check compares each primary's process (run_id) and
// key count with the check before, and a primary that came back with
// fewer than half its keys is logged as an error and counted (the alert
// ApolloRedisPrimaryRestartedWithoutItsData).

// nodeRun is what a node check learns of the process behind a node.
type nodeRun struct {
	Addr    string
	RunID   string
	Keys    int64 // keys of every database (INFO keyspace)
	Loading bool  // still loading its data set from disk
}

// parseNodeRun reads the text of INFO server, keyspace and persistence,
// in any order. ok is false without a run_id.
func parseNodeRun(addr, info string) (r nodeRun, ok bool) {
	r.Addr = addr
	infoFields(info, func(k, v string) {
		switch {
		case k == "run_id":
			r.RunID, ok = v, v != ""
		case k == "loading":
			r.Loading = v == "1"
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
	notRestarted     restartVerdict = iota
	restartUndecided                // restarted, still loading: judged at a later check
	restartKept                     // restarted with at least half its keys
	restartLost                     // restarted with fewer than half
)

// judgeRestart compares now with last, the same node's previous check
// (seen false: none). Half is the line because keys come and go between
// two checks (seconds apart), while a node that lost its data comes back
// with none, or with a snapshot's.
func judgeRestart(last nodeRun, seen bool, now nodeRun) restartVerdict {
	switch {
	case !seen || last.RunID == "" || now.RunID == last.RunID:
		return notRestarted
	case now.Loading:
		return restartUndecided
	case 2*now.Keys < last.Keys:
		return restartLost
	}
	return restartKept
}

// checkRestarts, with every node check, finds the primaries that
// restarted since the check before and says whether they kept their data.
// A replica's restart is not judged here: it copies its primary, whatever
// it came back with (restart.go holds it out of reads until then).
func (r *Router) checkRestarts() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.MemoryCheckInterval)
	defer cancel()
	t := r.topo.Load()
	known, _ := askEveryNode(t, func(n *node) (nodeRun, bool) {
		pipe := n.probe.Pipeline()
		server, keyspace, persistence := pipe.Info(ctx, "server"), pipe.Info(ctx, "keyspace"), pipe.Info(ctx, "persistence")
		if _, err := pipe.Exec(ctx); err != nil {
			return nodeRun{}, false
		}
		return parseNodeRun(n.addr, server.Val()+"\n"+keyspace.Val()+"\n"+persistence.Val())
	})
	in := t.byAddr()
	r.runMu.Lock()
	defer r.runMu.Unlock()
	for _, now := range known {
		n := in[now.Addr]
		if n == nil {
			continue
		}
		last, seen := r.runLast[now.Addr]
		v := judgeRestart(last, seen, now)
		if v == restartUndecided {
			continue // the check before stays the one to compare with
		}
		r.runLast[now.Addr] = now
		if v == notRestarted || t.isReplica(n) {
			continue
		}
		if v == restartLost {
			r.m.primaryRestarts.WithLabelValues("lost").Inc()
			r.log.Error("redis primary restarted without its data: its replicas copy what it came back with, so what its shard held is lost, confirmed bookings included (no persistence, or only an old snapshot); restore the shard from a backup if there is one",
				"node", now.Addr, "keys_before", last.Keys, "keys_now", now.Keys)
			continue
		}
		r.m.primaryRestarts.WithLabelValues("kept").Inc()
		r.log.Warn("redis primary restarted before a failover, with its data", "node", now.Addr, "keys_before", last.Keys, "keys_now", now.Keys)
	}
	for addr := range r.runLast {
		if in[addr] == nil {
			delete(r.runLast, addr)
		}
	}
}
