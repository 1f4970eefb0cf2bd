package redisroute

import (
	"errors"
	"fmt"
)

// Cmd is one command of a pipeline.
type Cmd struct {
	// Args is the whole command, name first: {"HMGET", key, "status", "lat"}.
	Args []any
	// Key routes the command: its hash slot picks the shard.
	Key string
	// Write marks a command that changes data. Writes go to the primary and
	// are never replayed once they may have run. Reads are idempotent: they
	// may be hedged or retried on any node of the shard.
	Write bool
	// Fresh, for a read, sends it to the primary only: read-your-writes,
	// for a read-modify-write that must see the latest version. It is never
	// hedged or retried on a replica, whose answer may be stale; if the
	// primary cannot answer, it fails (ErrUnavailable) or waits for a
	// failover within the call's deadline, like a write.
	Fresh bool
	// Acks, for a write, is how many replicas must acknowledge it (WAIT)
	// before it is reported as done; fewer gives ErrUnconfirmed.
	//
	// For a Fresh read, Acks makes it a confirmed read: after it, on the
	// same connection, the router writes a fence key of the read's slot and
	// WAITs for it, so the replicas that acknowledge the fence hold
	// everything the read saw; fewer gives ErrReadUnconfirmed. A primary cut
	// off from its replicas (alone on the minority side of a partition,
	// about to be replaced) cannot confirm a read, so such a read never
	// returns a write that the failover then undoes, nor misses one the new
	// primary took. WAIT proves what the node's replicas hold, not that the
	// node is still the primary: with Acks 1 and two replicas, a minority
	// that keeps the primary and one replica can still confirm reads.
	Acks int
}

// Read returns an idempotent read command whose key is its first argument.
func Read(name, key string, args ...any) Cmd {
	return Cmd{Args: append([]any{name, key}, args...), Key: key}
}

// Write returns a write command whose key is its first argument.
func Write(name, key string, args ...any) Cmd {
	return Cmd{Args: append([]any{name, key}, args...), Key: key, Write: true}
}

func (c Cmd) name() string {
	if len(c.Args) == 0 {
		return ""
	}
	s, _ := c.Args[0].(string)
	return s
}

func (c Cmd) validate() error {
	if len(c.Args) == 0 {
		return errors.New("empty command")
	}
	if c.name() == "" {
		return fmt.Errorf("command name must be a non-empty string, got %v", c.Args[0])
	}
	if c.Acks < 0 || c.Acks > 0 && !c.Write && !c.Fresh {
		return fmt.Errorf("%s: acks need a write or a fresh read and must not be negative, got %d", c.name(), c.Acks)
	}
	if c.Key == "" {
		return fmt.Errorf("%s: a routing key is required", c.name())
	}
	return nil
}

// Via says how a command's answer was obtained.
type Via string

// Routes.
const (
	ViaPreferred Via = "preferred" // the node the policy chose first
	ViaFallback  Via = "fallback"  // another node, because the preferred one was ejected or capped
	ViaHedge     Via = "hedge"     // a backup request that answered first
	ViaRetry     Via = "retry"     // a retry after the first node did not answer
	ViaRedirect  Via = "redirect"  // followed MOVED or ASK
)

// Result is the outcome of one command.
type Result struct {
	// Val is the reply (RESP2 values: string, int64, []any, nil). A missing
	// key or field is nil, not an error.
	Val any
	// Err is nil on success. A Redis reply error (e.g. WRONGTYPE) is final;
	// ErrAmbiguous means a write may or may not have been applied.
	Err error
	// Node is the address that produced the result.
	Node string
	// Via says whether the preferred node answered, or a fallback, hedge, retry or redirect.
	Via Via
	// Attempts counts the requests sent for this command.
	Attempts int
}

// Results are a pipeline's results, in command order.
type Results []Result

// Err returns nil when every command succeeded, else an error naming the
// first failure, for callers that want all or nothing.
func (rs Results) Err() error {
	failed := 0
	var first error
	firstIdx := 0
	for i, r := range rs {
		if r.Err != nil {
			if first == nil {
				first, firstIdx = r.Err, i
			}
			failed++
		}
	}
	if first == nil {
		return nil
	}
	return &PipelineError{Failed: failed, Total: len(rs), Index: firstIdx, Err: first}
}

// OK counts the successful commands.
func (rs Results) OK() int {
	n := 0
	for _, r := range rs {
		if r.Err == nil {
			n++
		}
	}
	return n
}

// PipelineError reports that some commands of a pipeline failed.
type PipelineError struct {
	Failed, Total, Index int
	Err                  error
}

func (e *PipelineError) Error() string {
	return fmt.Sprintf("%d of %d commands failed; command %d: %v", e.Failed, e.Total, e.Index, e.Err)
}

func (e *PipelineError) Unwrap() error { return e.Err }
