package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// persistFault is what FailPersistence changed on a node, for
// RestorePersistence to put back.
type persistFault struct {
	save  string // the node's save points before (CONFIG GET save)
	path  string // the snapshot's path, now a directory
	aside string // where a snapshot already there was moved, "" if none
}

// FailPersistence makes n unable to persist, as a full disk or a lost
// permission does: its next RDB snapshot fails, and from then on Redis
// refuses every write, and PING, with MISCONF (stop-writes-on-bgsave-error,
// on by default), while it goes on serving reads. The snapshot fails
// because its file's path is made a directory, which renaming the finished
// snapshot onto fails even for root; save points are set if the node had
// none (Redis checks the last snapshot only when some are set). It returns
// once the node says its last snapshot failed. RestorePersistence undoes
// it; a node must not be restarted in between (it could not load its
// snapshot).
func (n *Node) FailPersistence(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.persist != nil {
		return fmt.Errorf("%s cannot persist already", n.Addr)
	}
	cl := n.Client()
	defer cl.Close()
	cfg, err := cl.ConfigGet(ctx, "*").Result()
	if err != nil {
		return fmt.Errorf("CONFIG GET on %s: %w", n.Addr, err)
	}
	f := &persistFault{save: cfg["save"], path: filepath.Join(n.Dir, cfg["dbfilename"])}
	if cfg["dbfilename"] == "" || cfg["stop-writes-on-bgsave-error"] != "yes" {
		return fmt.Errorf("%s: dbfilename %q, stop-writes-on-bgsave-error %q: a failed snapshot would not stop writes", n.Addr, cfg["dbfilename"], cfg["stop-writes-on-bgsave-error"])
	}
	if _, err := os.Stat(f.path); err == nil {
		f.aside = f.path + ".apollo-aside"
		if err := os.Rename(f.path, f.aside); err != nil {
			return err
		}
	}
	n.persist = f // from here on, RestorePersistence has something to undo
	if err := os.Mkdir(f.path, 0o755); err != nil {
		return err
	}
	if f.save == "" {
		if err := cl.ConfigSet(ctx, "save", "3600 1").Err(); err != nil {
			return fmt.Errorf("CONFIG SET save on %s: %w", n.Addr, err)
		}
	}
	return n.snapshot(ctx, cl, "err")
}

// RestorePersistence undoes FailPersistence: the snapshot's path is freed,
// a snapshot succeeds (which is what lets Redis take writes again), and
// the save points are put back. A node that was not made to fail is left
// alone; a paused one is refused (resume it first).
func (n *Node) RestorePersistence(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	f := n.persist
	if f == nil {
		return nil
	}
	if n.state == Paused {
		// It could not take the snapshot that ends the refusals.
		return fmt.Errorf("%s is paused: resume it, then restore its persistence", n.Addr)
	}
	if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if f.aside != "" {
		if err := os.Rename(f.aside, f.path); err != nil {
			return err
		}
	}
	n.persist = nil
	if n.state == Stopped {
		return nil // it starts with its configuration's save points and no failed snapshot
	}
	cl := n.Client()
	defer cl.Close()
	if err := n.snapshot(ctx, cl, "ok"); err != nil {
		return err
	}
	return cl.ConfigSet(ctx, "save", f.save).Err()
}

// snapshot has n take a snapshot (BGSAVE, over cl) and waits until none
// is in progress and the last one ended with status ("ok" or "err"). A
// snapshot already running, or an AOF rewrite, is waited for first.
func (n *Node) snapshot(ctx context.Context, cl *redis.Client, status string) error {
	asked := false
	for {
		info, err := cl.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("INFO persistence on %s: %w", n.Addr, err)
		}
		idle := strings.Contains(info, "rdb_bgsave_in_progress:0") && strings.Contains(info, "aof_rewrite_in_progress:0")
		switch {
		case asked && idle && strings.Contains(info, "rdb_last_bgsave_status:"+status):
			return nil
		case idle:
			// A save that another started (save points, a replica's full
			// sync) may end first and leave the other status: ask again.
			if err := cl.BgSave(ctx).Err(); err != nil && !strings.Contains(err.Error(), "in progress") {
				return fmt.Errorf("BGSAVE on %s: %w", n.Addr, err)
			}
			asked = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no snapshot ended %s: %w", n.Addr, status, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
