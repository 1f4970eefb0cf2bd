package redisroute

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// A replica that crashes and restarts while none of the router's requests
// is on the wire breaks no connection the router sees: go-redis drops the
// closed connections from its pool and dials new ones, unseen. Nothing
// ejects it, so nothing re-admits it (awaitCheck), and it answered reads
// with its last snapshot, or nothing, until the next replication check
// (TestAReplicaThatRestartsQuietlyServesNoneUntilJudged). So every
// new request connection asks for the run_id of the process behind it,
// which Redis draws afresh at each start, in the same round trip as
// READONLY. A role does not tell a restart: a failover changes it, and a
// restarted replica is a replica still.

// errHeldOut refuses a new connection to a replica held out of reads:
// not judged by a replication check since it joined, was re-admitted or
// restarted, or judged behind its primary. A command routed to it before
// it was held goes to another node. Not wrapped by go-redis, and
// classified as not served (classify).
var errHeldOut = errors.New("redis replica held out of reads (restarted, rejoined or behind its primary, or not yet checked)")

// onConnect is the set-up of each new request connection to n: READONLY,
// so that a replica serves reads for its slots (a primary ignores it), and
// INFO server for connected. A node that refuses INFO (an ACL user without
// it) is not refused for that: its restarts go unseen (connected is told
// "").
func (n *node) onConnect(connected func(*node, string) error) func(context.Context, *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		var readOnly *redis.StatusCmd
		var info *redis.StringCmd
		_, _ = cn.Pipelined(ctx, func(p redis.Pipeliner) error {
			readOnly, info = p.ReadOnly(ctx), p.Info(ctx, "server")
			return nil
		})
		if err := readOnly.Err(); err != nil {
			return err
		}
		if err := info.Err(); err != nil {
			var reply redis.Error
			if !errors.As(err, &reply) {
				return err
			}
			return connected(n, "")
		}
		return connected(n, parseRunID(info.Val()))
	}
}

// parseRunID finds run_id in the text of INFO server, "" if absent.
func parseRunID(info string) (id string) {
	infoFields(info, func(k, v string) {
		if k == "run_id" {
			id = v
		}
	})
	return id
}

// connected records the run id a new request connection to n found
// behind it (noteRunID). A replica held out of reads, for a restart or any
// other reason, is refused the connection: no read is routed to it, so a
// command that reaches one was routed before the hold (refusing only
// until the first verdict let a pipeline through a new connection 2 ms
// after the check had found the replica behind, likely dialled again by
// go-redis for the one whose connection was refused: old data).
// A primary, a node the slot map does not list as a replica, or one a
// redirect has named a slot's owner since it was held, is not refused.
func (r *Router) connected(n *node, runID string) error {
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	r.noteRunID(n, runID, r.clock.Now())
	if n.behind.Load() && r.topo.Load().isReplica(n) && !n.ownerSinceHeld() {
		return errHeldOut
	}
	return nil
}

// namedOwner records that a redirect (MOVED, ASK) named n the owner of a
// slot at now: a primary, whatever the slot map in use says.
func (n *node) namedOwner(now time.Time) { n.ownerAt.Store(now.UnixNano()) }

// ownerSinceHeld reports a redirect naming n a slot's owner after the
// verdict that holds it out of reads and after it last (re)joined: a
// replica promoted before the router's refresh, whose data is the slot's
// now. A command sent there was redirected to it, and refused it backed
// off until the refresh, or failed
// (TestAWriteMovedToAHeldReplicaIsServedThere). Under ejectMu (joined).
func (n *node) ownerSinceHeld() bool {
	v := n.repl.Load()
	if v == nil {
		return false
	}
	at := n.ownerAt.Load()
	return at > v.at.UnixNano() && at > n.joined.UnixNano()
}

// sawRunID records the run id a replication check asked at asked found
// behind n. The checks learn it too, so that a replica that restarts
// before any request connection to it is told apart at the first one
// (TestAReplicaThatRestartsQuietlyServesNoneUntilJudged).
func (r *Router) sawRunID(n *node, runID string, asked time.Time) {
	r.ejectMu.Lock()
	defer r.ejectMu.Unlock()
	r.noteRunID(n, runID, asked)
}

// noteRunID records runID, found behind n at at. One other than the last
// recorded is a restart: n is held out of reads until a check judges it,
// as a re-admitted node is. An answer older than the one recorded (a
// check asked before a request connection set itself up, and judged
// after) is passed over: it would undo a newer one. "" (INFO refused)
// tells nothing. Under ejectMu.
func (r *Router) noteRunID(n *node, runID string, at time.Time) {
	if runID == "" || at.Before(n.runIDAt) {
		return
	}
	if n.runID != "" && n.runID != runID {
		if r.topo.Load().isReplica(n) {
			r.log.Warn("redis replica restarted: no reads from it until the replication check judges it", "node", n.addr)
		} else {
			r.log.Warn("redis node restarted", "node", n.addr)
		}
		r.awaitCheck(n, r.clock.Now())
	}
	n.runID, n.runIDAt = runID, at
}

// isReplica reports whether t lists n as a replica of one of its shards.
func (t *topology) isReplica(n *node) bool {
	if t == nil {
		return false
	}
	for _, s := range t.shards {
		if slices.Contains(s.replicas, n) {
			return true
		}
	}
	return false
}
