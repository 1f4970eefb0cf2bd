package redisroute

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// attempt is one sub-pipeline sent to one node for some commands of a call.
type attempt struct {
	node   *node
	idx    []int // positions in the call's command list
	via    Via
	asking bool // ASK redirect: prefix ASKING
	hedged bool // it had its hedge (sent, or denied by the budget), or is one: see onSilent
	done   bool // its replies were handled: no more looks at it
	// confirm is how many replicas must hold what the attempt's reads
	// saw, whatever the commands ask (see suspectFallback): set on a read
	// that falls back to a primary whose replicas have fallen behind it.
	confirm int

	// Filled by the sending goroutine before it reports back.
	replies []redis.Cmder
	rtt     time.Duration
	acked   int64 // replicas that acknowledged the writes (WAIT), when asked
	// proofErr: the WAIT met its count, but a replica of the shard could
	// not be shown to hold the writes or at least not to have been
	// promoted without them (proof.go).
	proofErr error
	// fenceErr is the fence write's failure: WAIT then covers nothing the
	// attempt's confirmed reads saw.
	fenceErr error
}

// send runs the attempt on its node and records what it says about the
// node's health. It is called on its own goroutine; the replies are read by
// the call only after the attempt is reported on the call's event channel.
func (r *Router) send(ctx context.Context, a *attempt, cmds []Cmd) {
	// One array for the wire and the replies: room for an ASKING before
	// each command, a fence, a WAIT and its two proof commands; without
	// ASKING the replies are the wire's first commands.
	n := len(a.idx)
	room := n + 4
	if a.asking {
		room += n + 1
	}
	wire := make([]redis.Cmder, 0, room)
	// ASKING lets only the next command in: one before each.
	asking := func() {
		if a.asking {
			wire = append(wire, redis.NewStatusCmd(ctx, "asking"))
		}
	}
	for _, i := range a.idx {
		asking()
		wire = append(wire, redis.NewCmd(ctx, cmds[i].Args...))
	}
	a.replies = wire[:n:n]
	if a.asking {
		a.replies = make([]redis.Cmder, n)
		for k := range a.replies {
			a.replies[k] = wire[2*k+1] // after its ASKING
		}
	}
	var fence *redis.Cmd
	if k := confirmedRead(a.idx, cmds, a.confirm); k >= 0 {
		// After the reads, so that WAIT's offset covers what they saw.
		fence = newFence(ctx, a.node, r.fenceKey(Slot(cmds[k].Key)))
		asking()
		wire = append(wire, fence)
	}
	var wait *redis.IntCmd
	var pf proof
	acks := max(maxAcks(a.idx, cmds), a.confirm)
	if acks > 0 {
		prove := r.cfg.Policy != Legacy2019
		if prove {
			pf = newProof(ctx)
			wire = append(wire, pf.before)
		}
		// WAIT covers every write sent before it on this connection.
		wait = redis.NewIntCmd(ctx, "wait", acks, r.cfg.AckTimeout.Milliseconds())
		wire = append(wire, wait)
		if prove {
			wire = append(wire, pf.after)
		}
	}
	start := r.clock.Now()
	a.node.begin(start)
	var err error
	if a.node.reads.after > 0 && !a.asking && fence == nil && wait == nil && !anyWrite(a.idx, cmds) && r.cfg.Policy != Legacy2019 {
		err = a.node.reads.exec(ctx, a.node.pipe, wire) // plain reads, to be merged
	} else {
		err = execStamped(ctx, a.node.pipe, wire)
	}
	if wait != nil {
		a.acked = wait.Val()
	}
	if fence != nil {
		a.fenceErr = fence.Err()
	}
	end := r.clock.Now()
	a.rtt = end.Sub(start)
	cl := classify(batchErr(err, a.replies))
	a.node.end(end, a.rtt, !cl.nodeFault() && cl != classCanceled)
	if cl.nodeFault() {
		r.nodeFailed(a.node, cl, err)
	}
	if pf.before != nil && a.acked >= int64(acks) && anyAnswered(a.replies) {
		// After end: the primary answered; the replicas' silence is theirs.
		a.proofErr = r.holds(a, pf)
	}
}

// anyAnswered reports whether some reply is a result, not an error: a
// proof of replies that all failed (MOVED, a script error) proves nothing.
func anyAnswered(replies []redis.Cmder) bool {
	for _, c := range replies {
		if classify(c.Err()) == classOK {
			return true
		}
	}
	return false
}

// confirmedRead is the position of the first read among idx that asks for
// replica acknowledgement (any read when the attempt confirms them all), or -1.
func confirmedRead(idx []int, cmds []Cmd, confirm int) int {
	for _, i := range idx {
		if !cmds[i].Write && (cmds[i].Acks > 0 || confirm > 0) {
			return i
		}
	}
	return -1
}

func anyWrite(idx []int, cmds []Cmd) bool {
	for _, i := range idx {
		if cmds[i].Write {
			return true
		}
	}
	return false
}

func maxAcks(idx []int, cmds []Cmd) int {
	m := 0
	for _, i := range idx {
		m = max(m, cmds[i].Acks)
	}
	return m
}

// batchErr is the error that hit the whole sub-pipeline, if any: a
// connection-level failure sets the same error on every command.
func batchErr(err error, replies []redis.Cmder) error {
	if err == nil || len(replies) == 0 {
		return nil
	}
	first := replies[0].Err()
	if first == nil || classify(first) == classReply {
		return nil
	}
	return first
}

// The kinds of apollo_redis_node_errors_total.
const (
	kindUnsent     = "unsent"
	kindUnanswered = "unanswered"
	kindAuth       = "auth" // the node refused our credentials or rights
	kindBusy       = "busy"
	kindFull       = "full"
)

// nodeErrorKinds lists every kind: each node's counters start at 0.
var nodeErrorKinds = []string{kindUnsent, kindUnanswered, kindAuth, kindBusy, kindFull}

// isAuthRefusal: err is a refusal of our credentials or rights
// (WRONGPASS, NOAUTH, NOPERM, or a TLS alert against our client
// certificate), as a request's failure would be counted (failureKind).
func isAuthRefusal(err error) bool {
	kind, _ := failureKind(classify(err), err)
	return kind == kindAuth
}

func (r *Router) nodeFailed(n *node, cl class, err error) {
	kind, reason := failureKind(cl, err)
	r.m.nodeErrors.WithLabelValues(n.addr, kind).Inc()
	r.eject(n, reason)
	r.requestRefresh(refreshConnError)
}

// failureKind says how a node's failure of class cl is counted (its kind
// of apollo_redis_node_errors_total) and why the node is ejected.
func failureKind(cl class, err error) (kind, reason string) {
	kind, reason = kindUnanswered, ejectUnanswered
	switch cl {
	case classUnsent:
		kind, reason = kindUnsent, ejectRefused
		if failed, _ := isSetUpFailure(err); failed {
			kind, reason = kindUnanswered, ejectUnanswered // it took the connection, then failed it
		}
		if isTLSRefusal(err) {
			kind, reason = kindAuth, ejectAuth // it refused our certificate
		}
	case classRefused:
		switch {
		case isBusy(err):
			kind, reason = kindBusy, ejectBusy
		case isFull(err):
			kind, reason = kindFull, ejectFull
		default:
			kind, reason = kindAuth, ejectAuth
		}
	}
	return kind, reason
}
