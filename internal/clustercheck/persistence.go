package clustercheck

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Persistence is what a node keeps on disk.
type Persistence struct {
	AppendOnly  string `json:"appendonly"`
	AppendFsync string `json:"appendfsync"`
	Save        string `json:"save"`
	// What a node does when a snapshot fails: refuse writes (yes, the
	// default), and, as a replica, crash at its next replicated write
	// rather than go on without it (replica-ignore-disk-write-errors no,
	// the default; "" before Redis 7.0, which has no such setting).
	StopWritesOnBgsaveError      string `json:"stop_writes_on_bgsave_error,omitempty"`
	ReplicaIgnoreDiskWriteErrors string `json:"replica_ignore_disk_write_errors,omitempty"`
}

func readPersistence(ctx context.Context, c *redis.Client) *Persistence {
	p := &Persistence{}
	for name, into := range map[string]*string{"appendonly": &p.AppendOnly, "appendfsync": &p.AppendFsync, "save": &p.Save,
		"stop-writes-on-bgsave-error": &p.StopWritesOnBgsaveError, "replica-ignore-disk-write-errors": &p.ReplicaIgnoreDiskWriteErrors} {
		v, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return nil
		}
		*into = v[name] // "" for a setting this version does not have
	}
	if p.AppendOnly == "" {
		return nil
	}
	return p
}

// persistenceFinding is what a setting means for Apollo's bookings, or ""
// when it keeps every confirmed one through a restart of every node.
func persistenceFinding(p Persistence) (Severity, string, string) {
	switch {
	case p.AppendOnly != "yes" && strings.TrimSpace(p.Save) == "":
		return Warning, "persistence_none", "nothing is persisted (appendonly no, no save points): a primary that crashes and is restarted by its supervisor within cluster-node-timeout comes back empty, still the primary, and its replicas copy the empty data set, so every booking and reservation of its shard is gone, confirmed ones included (apollo verify --faults primary-restart --persistence none); so is a shard whose nodes all restart at once (a power cut, an upgrade done all at once). Set appendonly yes (appendfsync everysec)"
	case p.AppendOnly != "yes":
		return Warning, "persistence_snapshots_only", fmt.Sprintf("only RDB snapshots (save %q): a primary restarted by its supervisor before a failover, or every node of a shard restarted at once, comes back with its last snapshot, and its replicas copy it: what changed since is lost, confirmed bookings included. Set appendonly yes (appendfsync everysec)", p.Save)
	case p.AppendFsync == "no":
		return Warning, "persistence_fsync_no", "appendfsync no: a process crash loses nothing, but a power cut of every host of a shard loses what the kernel had not yet written (tens of seconds). appendfsync everysec bounds it to a second"
	case p.AppendFsync == "everysec":
		return Info, "persistence_everysec", "appendonly yes, appendfsync everysec: a crash of every Redis process keeps every confirmed booking (the write reached the kernel before the reply); a power cut of every host of a shard at once can lose the last second"
	}
	return Info, "", ""
}

// replicaDiskFinding says, of a node with save points that stops writes
// when a snapshot fails, that as a replica it then crashes (seen on Redis
// 7.0.15: "Replica was unable to write command to disk"), or "" when it
// does not.
func replicaDiskFinding(p Persistence) (Severity, string, string) {
	if strings.TrimSpace(p.Save) == "" || p.StopWritesOnBgsaveError != "yes" || p.ReplicaIgnoreDiskWriteErrors != "no" {
		return Info, "", ""
	}
	return Info, "replica_crashes_on_disk_error", "save points are set and stop-writes-on-bgsave-error is yes: a node whose snapshot fails (a full disk) refuses writes, and as a replica (replica-ignore-disk-write-errors no) it crashes at its next replicated write. Apollo takes that as a replica crash, and the shard has a replica fewer until the disk is mended: watch disks (ApolloRedisCannotPersist), or set replica-ignore-disk-write-errors yes to keep such a replica up"
}

// persistenceFindings groups the nodes by what their setting means: one
// finding per meaning, naming the nodes, the worst first. Nodes whose
// settings could not be read are named in an Info finding.
func persistenceFindings(nodes []Node) []Finding {
	byCode := map[string]*Finding{}
	count := map[string]int{}
	var unread []string
	reachable := 0
	for _, n := range nodes {
		if !n.Reachable {
			continue
		}
		reachable++
		if n.Persistence == nil {
			unread = append(unread, n.Addr)
			continue
		}
		for _, find := range []func(Persistence) (Severity, string, string){persistenceFinding, replicaDiskFinding} {
			sev, code, msg := find(*n.Persistence)
			if code == "" {
				continue
			}
			f, ok := byCode[code]
			if !ok {
				f = &Finding{Severity: sev, Code: code, Message: msg}
				byCode[code] = f
			}
			f.Node = strings.TrimPrefix(f.Node+", "+n.Addr, ", ")
			count[code]++
		}
	}
	var out []Finding
	for code, f := range byCode {
		where := f.Node
		if count[code] == reachable && reachable > 1 {
			where = fmt.Sprintf("all %d nodes", reachable)
		}
		f.Message = fmt.Sprintf("%s (on %s)", f.Message, where)
		f.Node = ""
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Severity > out[j].Severity || out[i].Severity == out[j].Severity && out[i].Code < out[j].Code
	})
	if len(unread) > 0 {
		out = append(out, Finding{Severity: Info, Code: "persistence_unknown",
			Message: "CONFIG GET is not allowed, so persistence is not known on " + strings.Join(unread, ", ") + "; without appendonly yes a restart of every node of a shard loses its bookings"})
	}
	return out
}

// diskFindings names the nodes that refuse writes because their last
// snapshot or AOF write failed (they answer PING with MISCONF).
func diskFindings(nodes []Node) []Finding {
	var out []Finding
	for _, n := range nodes {
		if !n.Reachable || n.Disk == nil || !n.Disk.RefusesWrites {
			continue
		}
		what, mend := "its last RDB snapshot failed", "Mend the disk, then BGSAVE on it"
		if n.Disk.AOFFailed {
			what, mend = "its last AOF write failed", "Mend the disk: the refusals end once Redis writes its AOF again"
		}
		out = append(out, Finding{Severity: Critical, Code: "persistence_failing", Node: n.Addr,
			Message: what + " (a full disk, a directory it may no longer write: its log says which), and it refuses every write (MISCONF): as a primary, Apollo answers 503 for every change on its shard; as a replica, it crashes at its next replicated write. " + mend + "."})
	}
	return out
}
