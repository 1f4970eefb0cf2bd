package redisroute

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A node that cannot write its data to disk (its last RDB snapshot or AOF
// write failed: a full disk, a directory it may no longer write) refuses
// every write, and PING, with MISCONF until one succeeds, while it goes on
// serving reads; a replica in that state crashes at its next replicated
// write (unless replica-ignore-disk-write-errors). Redis says why only in
// INFO persistence and its log, so the router asks every node in the
// background, with the memory check, and exports and logs what it finds:
// the store turns the refusals into 503s (redisstore.ErrCannotPersist),
// and an operator has to mend the disk.

// NodePersistence is what a node says about writing its data to disk.
type NodePersistence struct {
	Addr string `json:"addr"`
	// RefusesWrites: the node answered PING with MISCONF, which it does
	// exactly while it refuses writes for a failed snapshot (with save
	// points set and stop-writes-on-bgsave-error on, the defaults) or AOF
	// write. A failed snapshot alone (INFO's rdb_last_bgsave_status:err,
	// SnapshotFailed) refuses nothing on a node without save points.
	RefusesWrites bool `json:"refuses_writes"`
	// SnapshotFailed is rdb_last_bgsave_status:err; AOFFailed is
	// aof_last_write_status:err (a write or fsync of the AOF failed).
	SnapshotFailed bool `json:"snapshot_failed"`
	AOFFailed      bool `json:"aof_failed"`
}

// parsePersistence reads the text of INFO persistence. ok is false when
// rdb_last_bgsave_status is missing (not an INFO persistence).
func parsePersistence(addr, info string) (p NodePersistence, ok bool) {
	p.Addr = addr
	infoFields(info, func(k, v string) {
		switch k {
		case "rdb_last_bgsave_status":
			p.SnapshotFailed, ok = v == "err", true
		case "aof_last_write_status":
			p.AOFFailed = v == "err"
		}
	})
	return p, ok
}

// ReadPersistence asks c's node (INFO persistence, and PING) whether it
// can write its data to disk now; addr names it in the answer.
func ReadPersistence(ctx context.Context, c *redis.Client, addr string) (NodePersistence, error) {
	pipe := c.Pipeline()
	info, ping := pipe.Info(ctx, "persistence"), pipe.Ping(ctx)
	_, _ = pipe.Exec(ctx)
	if err := info.Err(); err != nil {
		return NodePersistence{}, err
	}
	p, ok := parsePersistence(addr, info.Val())
	if !ok {
		return NodePersistence{}, fmt.Errorf("%s: INFO persistence has no rdb_last_bgsave_status", addr)
	}
	if err := ping.Err(); err != nil && !IsCannotPersist(err) {
		return NodePersistence{}, err
	}
	p.RefusesWrites = IsCannotPersist(ping.Err())
	return p, nil
}

// Persistence asks every node of the current topology whether it can
// write its data to disk now, each through its probe pool and bounded by
// ctx. Nodes that do not answer are listed in unknown.
func (r *Router) Persistence(ctx context.Context) (known []NodePersistence, unknown []string) {
	return askEveryNode(r.topo.Load(), func(n *node) (NodePersistence, bool) {
		p, err := ReadPersistence(ctx, n.probe, n.addr)
		return p, err == nil
	})
}

// checkNodes, every MemoryCheckInterval, asks every node for its memory
// and the process behind it (restart_data.go), then its persistence.
func (r *Router) checkNodes() {
	r.checkMemory()
	r.checkPersistence()
	r.exportCertExpiry()
}

// checkPersistence, with every memory check, exports whether each node can
// persist and logs a node that stops or starts again. As with memory, a
// node that left the topology while it was asked is not exported.
func (r *Router) checkPersistence() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.MemoryCheckInterval)
	defer cancel()
	known, _ := r.Persistence(ctx)
	in := r.topo.Load().byAddr()
	r.persistMu.Lock()
	defer r.persistMu.Unlock()
	for _, p := range known {
		if in[p.Addr] == nil {
			continue
		}
		failing := 0.0
		if p.RefusesWrites {
			failing = 1
		}
		r.m.cannotPersist.WithLabelValues(p.Addr).Set(failing)
		last, seen := r.persistLast[p.Addr]
		r.persistLast[p.Addr] = p
		switch {
		case p.RefusesWrites && (!seen || !last.RefusesWrites):
			r.log.Error("redis node cannot write its data to disk: it refuses every write (MISCONF) until a snapshot or AOF write succeeds (a replica crashes at its next replicated write); check its disk and its log",
				"node", p.Addr, "snapshot_failed", p.SnapshotFailed, "aof_failed", p.AOFFailed)
		case !p.RefusesWrites && seen && last.RefusesWrites:
			r.log.Info("redis node writes its data to disk again", "node", p.Addr)
		}
	}
	for addr := range r.persistLast {
		if in[addr] == nil {
			delete(r.persistLast, addr)
		}
	}
}
