package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// resyncDelay is Redis's default repl-diskless-sync-delay, which the
// cluster's nodes run without (0) for speed: how long a primary waits for
// more replicas before it sends a full sync.
const resyncDelay = "5"

// FallBehind kills replica n and writes more to its primary than the
// primary's replication backlog holds (shrunk to the least Redis allows),
// as a replica that crashed during a burst of writes, or stayed down long,
// has fallen: restarted, it comes back with its last snapshot (its AOF,
// or its last full sync's) and needs the whole data set, which the primary
// sends only after repl-diskless-sync-delay, set back to Redis's default of
// 5 s. Until then it answers PING at once, and reads with its old data.
// undo puts the primary's settings back as they were and deletes what was
// written (call it whatever FallBehind returned, once the replica has
// caught up: with the delay back, a pending full sync starts then).
func (n *Node) FallBehind(ctx context.Context, primary *Node) (undo func(context.Context) error, err error) {
	admin := primary.Client()
	var filler string
	was := map[string]string{} // the settings changed, as they were
	undo = func(ctx context.Context) error {
		defer admin.Close()
		var errs []error
		if filler != "" {
			errs = append(errs, admin.Del(ctx, filler).Err())
		}
		for k, v := range was {
			errs = append(errs, admin.ConfigSet(ctx, k, v).Err())
		}
		return errors.Join(errs...)
	}
	for _, kv := range [][2]string{{"repl-diskless-sync-delay", resyncDelay}, {"repl-backlog-size", "16kb"}} {
		old, err := admin.ConfigGet(ctx, kv[0]).Result()
		if err == nil && old[kv[0]] == "" {
			err = errors.New("no value")
		}
		if err != nil {
			return undo, fmt.Errorf("CONFIG GET %s on %s: %w", kv[0], primary.Addr, err)
		}
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return undo, fmt.Errorf("CONFIG SET %s on %s: %w", kv[0], primary.Addr, err)
		}
		was[kv[0]] = old[kv[0]]
	}
	if err := n.Kill(); err != nil {
		return undo, err
	}
	if filler, err = overflowBacklog(ctx, admin); err != nil {
		return undo, fmt.Errorf("write past the backlog of %s: %w", primary.Addr, err)
	}
	return undo, nil
}

// overflowBacklog writes 256 KiB, sixteen times a 16 KiB backlog, to a key
// of the primary's own (one it does not answer MOVED for) and returns it.
func overflowBacklog(ctx context.Context, admin *redis.Client) (string, error) {
	value := strings.Repeat("x", 64<<10)
	for i := 0; i < 1000; i++ {
		key := "localcluster:backlog:" + strconv.Itoa(i)
		err := admin.Set(ctx, key, value, 0).Err()
		if _, moved := redis.IsMovedError(err); moved {
			continue
		}
		if err != nil {
			return "", err
		}
		for j := 1; j < 4; j++ {
			if err := admin.Set(ctx, key, value, 0).Err(); err != nil {
				return key, err
			}
		}
		return key, nil
	}
	return "", errors.New("no key of its own found")
}
