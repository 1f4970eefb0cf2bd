package redisroute

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Errors a Result can carry (compare with errors.Is).
var (
	// ErrAmbiguous: a write's request may have reached Redis but no reply
	// came back; it may or may not have been applied. It is not replayed.
	ErrAmbiguous = errors.New("write outcome unknown: the request was sent but no reply arrived")
	// ErrUnconfirmed: the primary applied the write but fewer replicas than
	// asked acknowledged it in time, so a failover could still lose it.
	ErrUnconfirmed = errors.New("write applied on the primary but not confirmed by enough replicas")
	// ErrReadUnconfirmed: a confirmed read (Fresh, with Acks) got its
	// answer, but fewer replicas than asked hold everything it saw, so the
	// answer may be one a failover undoes, or come from a primary already
	// replaced (cut off from its replicas, it cannot know). Nothing was
	// changed; the read may be tried again.
	ErrReadUnconfirmed = errors.New("read not confirmed by enough replicas: the node may no longer be the primary")
	// ErrNoNode: the topology has no node for the key's slot.
	ErrNoNode = errors.New("no Redis node serves this slot")
	// ErrUnavailable: every node that could serve the command failed or is ejected.
	ErrUnavailable = errors.New("no Redis node could serve the command")
	// ErrLegacyPipelineFailed: legacy-2019 failed the whole pipeline because one command failed.
	ErrLegacyPipelineFailed = errors.New("pipeline failed because one of its commands failed (legacy-2019 behaviour)")
	// ErrClosed: the router is closed.
	ErrClosed = errors.New("redis router is closed")
	// ErrInvalidCommand: the command is malformed; it was not sent.
	ErrInvalidCommand = errors.New("invalid command")
)

// class is what an error means for routing, the one place that decides
// retries, redirects, ejections and refreshes.
type class int

const (
	classOK         class = iota
	classReply            // a Redis reply error about the command itself: final
	classMoved            // MOVED: slot lives elsewhere; follow and refresh
	classAsk              // ASK: slot migrating; ask the target once
	classTryAgain         // TRYAGAIN: multi-key during migration; back off, same node
	classClusterDn        // CLUSTERDOWN / MASTERDOWN: back off, refresh
	classNotServed        // READONLY / LOADING / errHeldOut: this node cannot serve it now; refresh, other node
	classUnsent           // the request never left: dial failed, pool exhausted
	classRefused          // the node refused us: authentication or permission failed (WRONGPASS, NOAUTH, NOPERM), it is full (maxclients), or it is busy with a script (BUSY); nothing ran
	classUnanswered       // sent (maybe), no reply: timeout, EOF, reset
	classCanceled         // the caller's context ended
)

func classify(err error) class {
	if err == nil || errors.Is(err, redis.Nil) {
		return classOK
	}
	if failed, full := isSetUpFailure(err); failed {
		if full {
			return classRefused
		}
		return classUnsent
	}
	switch {
	case isUnsent(err):
		// Before the context check: net's dial timeout also says it is
		// context.DeadlineExceeded, yet nothing was sent, and a write
		// that was never sent may be sent again.
		return classUnsent
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return classCanceled
	}
	if _, ok := redis.IsMovedError(err); ok {
		return classMoved
	}
	if _, ok := redis.IsAskError(err); ok {
		return classAsk
	}
	switch {
	case redis.IsTryAgainError(err):
		return classTryAgain
	case redis.IsClusterDownError(err), redis.IsMasterDownError(err), isWriteRefused(err):
		return classClusterDn
	case redis.IsReadOnlyError(err), redis.IsLoadingError(err), errors.Is(err, errHeldOut):
		return classNotServed
	case isRefusal(err), isBusy(err):
		return classRefused
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return classReply
	}
	return classUnanswered
}

// isReply reports a Redis error reply that starts with prefix.
func isReply(err error, prefix string) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), prefix)
}

// IsOutOfMemory reports a node's OOM refusal: at its maxmemory, it refused
// a write before the command (or a script's first write) ran.
func IsOutOfMemory(err error) bool { return isReply(err, "OOM ") }

// IsCannotPersist reports a node's MISCONF refusal: its last RDB snapshot
// or AOF write failed (a full disk, a directory it may no longer write),
// and until one succeeds it refuses every write, and PING, before the
// command (or a script's first write) runs. It still serves reads.
func IsCannotPersist(err error) bool { return isReply(err, "MISCONF ") }

// isRefusal reports the Redis errors of a node that will not serve this
// client: a password or ACL user it does not know (a rotation half done, a
// replaced node without the ACL user), a user without the rights Apollo
// needs, or no room for another client. Raised during the connection's
// set-up, they fail every command sent on it, and none of them ran.
func isRefusal(err error) bool {
	if redis.IsAuthError(err) || redis.IsPermissionError(err) || isFull(err) {
		return true
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	// AUTH sent to a node that has no password, and Redis < 6's wording.
	msg := rerr.Error()
	return strings.HasPrefix(msg, "ERR AUTH") || strings.HasPrefix(msg, "ERR invalid password") || strings.HasPrefix(msg, "ERR Client sent AUTH")
}

// isFull reports a node that refused a new connection at its maxclients
// (another application's connections filled it): in a reply, or as the
// greeting of a connection it then closed (see setupconn.go).
func isFull(err error) bool {
	_, full := isSetUpFailure(err)
	return full || isReply(err, maxClientsReply)
}

// isBusy reports a node busy with a script that has run past
// busy-reply-threshold (5 s by default; another application's, sharing the
// cluster): it answers every command with BUSY, PING and reads included,
// and runs none, until the script ends or is killed. It is up and answers,
// yet serves nothing: a failed node, like one that refuses us.
func isBusy(err error) bool { return isReply(err, "BUSY ") }

// isNodeState reports an error reply that is the node's state rather than
// anything of the client's: the cluster down (as the node sees it), its
// data loading, a script holding it, a failed snapshot, a full memory.
// Every client that reaches the node meets it alike.
func isNodeState(err error) bool {
	return redis.IsClusterDownError(err) || redis.IsMasterDownError(err) || redis.IsLoadingError(err) ||
		isBusy(err) || IsCannotPersist(err) || IsOutOfMemory(err)
}

// isWriteRefused reports the refusals of a primary that will take no write
// now, raised before the command (or a script's first write) ran:
// min-replicas-to-write not met (NOREPLICAS), or a script's write while
// the cluster is down (which Redis words as ERR, not CLUSTERDOWN). Like
// CLUSTERDOWN, the call backs off and routes again.
func isWriteRefused(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "NOREPLICAS ") || strings.Contains(msg, "write command while the cluster is down")
}

// isUnsent reports errors raised before a request could have been written.
func isUnsent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection pool timeout") || strings.Contains(msg, "pool: ") && strings.Contains(msg, "dial")
}

// refusesConnections reports a node that takes no connection at all: a
// dial refused or failed. One that accepted a connection and then failed
// its set-up (no HELLO answer in time, a reset) is unsent too, yet may
// only be slow.
func refusesConnections(err error) bool {
	failed, _ := isSetUpFailure(err)
	return !failed && classify(err) == classUnsent
}

// nodeFault reports whether the error says the node itself is unwell (as
// opposed to the command or the caller).
func (c class) nodeFault() bool {
	return c == classUnsent || c == classRefused || c == classUnanswered
}

// notRun reports errors that prove the command did not run, so a write may
// be sent again.
func (c class) notRun() bool {
	return c == classUnsent || c == classRefused
}
