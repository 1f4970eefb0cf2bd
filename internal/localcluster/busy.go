package localcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// busyScript runs until SCRIPT KILL: it writes nothing, so it may be killed.
const busyScript = "while true do end"

// busyFault is what Busy started, for Unbusy to end.
type busyFault struct {
	threshold string        // busy-reply-threshold before
	cl        *redis.Client // the connection the script runs on
	done      chan error    // the script's answer, once killed
}

// Busy has n run a script that never ends, as a slow script of another
// application sharing the cluster would: after busy-reply-threshold (set
// here to 1 ms) Redis answers every other command with BUSY, reads and
// PING included, while the node stays up and in the cluster. Unbusy kills
// the script (SCRIPT KILL) and puts the threshold back.
func (n *Node) Busy(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.busy != nil {
		return fmt.Errorf("%s is busy already", n.Addr)
	}
	admin := n.Client()
	defer admin.Close()
	got, err := admin.ConfigGet(ctx, "busy-reply-threshold").Result()
	if err != nil || got["busy-reply-threshold"] == "" {
		return fmt.Errorf("CONFIG GET busy-reply-threshold on %s: %v", n.Addr, err)
	}
	if err := admin.ConfigSet(ctx, "busy-reply-threshold", "1").Err(); err != nil {
		return fmt.Errorf("CONFIG SET busy-reply-threshold on %s: %w", n.Addr, err)
	}
	// The script's answer comes when it is killed.
	f := &busyFault{threshold: got["busy-reply-threshold"], cl: n.clientReading(-1), done: make(chan error, 1)}
	// It ends when the script is killed, or its connection closed.
	go func() { f.done <- f.cl.Eval(context.Background(), busyScript, nil).Err() }()
	n.busy = f // from here on, Unbusy has something to undo
	// Busy once another client is answered BUSY.
	for {
		err := admin.Ping(ctx).Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY ") {
			return nil
		}
		select {
		case err := <-f.done:
			f.done <- err
			return fmt.Errorf("%s: the busy script ended at once: %v", n.Addr, err)
		case <-ctx.Done():
			return fmt.Errorf("%s: never answered BUSY: %w", n.Addr, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// unbusyWithin bounds Unbusy, whatever its caller's context: it holds the
// node's lock, which Kill and Close need.
const unbusyWithin = 10 * time.Second

// Unbusy ends what Busy started: the script is killed, its connection
// closed, and busy-reply-threshold put back, within unbusyWithin. A node
// not made busy is left alone.
func (n *Node) Unbusy(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	f := n.busy
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, unbusyWithin)
	defer cancel()
	admin := n.Client()
	defer admin.Close()
	for {
		err := admin.ScriptKill(ctx).Err()
		if err == nil || strings.HasPrefix(err.Error(), "NOTBUSY") {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("SCRIPT KILL on %s: %v: %w", n.Addr, err, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return fmt.Errorf("%s: the busy script did not end: %w", n.Addr, ctx.Err())
	}
	f.cl.Close()
	n.busy = nil
	return admin.ConfigSet(ctx, "busy-reply-threshold", f.threshold).Err()
}
