package clustercheck

import (
	"strings"
	"testing"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

func TestPersistenceFindingsSayWhatARestartLoses(t *testing.T) {
	node := func(addr string, p *Persistence) Node { return Node{Addr: addr, Reachable: true, Persistence: p} }
	none := &Persistence{AppendOnly: "no", Save: ""}
	rdb := &Persistence{AppendOnly: "no", Save: "3600 1 300 100"}
	everysec := &Persistence{AppendOnly: "yes", AppendFsync: "everysec", Save: ""}
	always := &Persistence{AppendOnly: "yes", AppendFsync: "always"}
	defaults := &Persistence{AppendOnly: "yes", AppendFsync: "always", Save: "3600 1 300 100", StopWritesOnBgsaveError: "yes", ReplicaIgnoreDiskWriteErrors: "no"}
	ignores := &Persistence{AppendOnly: "yes", AppendFsync: "always", Save: "3600 1 300 100", StopWritesOnBgsaveError: "yes", ReplicaIgnoreDiskWriteErrors: "yes"}
	redis6 := &Persistence{AppendOnly: "yes", AppendFsync: "always", Save: "3600 1 300 100", StopWritesOnBgsaveError: "yes"}
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string // code: node list in the message
	}{
		{"every node without persistence: one warning naming them", []Node{node("a", none), node("b", none)},
			[]string{"persistence_none:on all 2 nodes"}},
		{"without persistence, a primary restarted at once loses its shard", []Node{node("a", none)}, []string{"persistence_none:restarted by its supervisor"}},
		{"snapshots only", []Node{node("a", rdb)}, []string{`persistence_snapshots_only:save "3600 1 300 100"`}},
		{"aof everysec is said, not warned", []Node{node("a", everysec)}, []string{"persistence_everysec:last second"}},
		{"aof always: nothing to say", []Node{node("a", always)}, nil},
		{"save points and Redis's defaults: a replica crashes when a snapshot fails", []Node{node("a", defaults), node("b", ignores), node("c", redis6)},
			[]string{"replica_crashes_on_disk_error:on a"}},
		{"mixed: the worst first, then the unknown", []Node{node("a", everysec), node("b", none), node("c", nil), {Addr: "d"}},
			[]string{"persistence_none:on b", "persistence_everysec:on a", "persistence_unknown:c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := persistenceFindings(tc.nodes)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings %+v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				code, says, _ := strings.Cut(w, ":")
				if got[i].Code != code || !strings.Contains(got[i].Message, says) {
					t.Errorf("finding %d = %s %q, want %s saying %q", i, got[i].Code, got[i].Message, code, says)
				}
			}
			if len(got) > 0 && got[0].Code == "persistence_none" && got[0].Severity != Warning {
				t.Errorf("no persistence is a %v, want a warning", got[0].Severity)
			}
		})
	}
}

func TestDiskFindingsNameNodesThatCannotPersist(t *testing.T) {
	node := func(addr string, d *redisroute.NodePersistence) Node {
		return Node{Addr: addr, Reachable: true, Disk: d}
	}
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string // code:node:what the message says
	}{
		{"persisting: nothing to say", []Node{node("a", &redisroute.NodePersistence{})}, nil},
		{"a failed snapshot", []Node{node("a", &redisroute.NodePersistence{}), node("b", &redisroute.NodePersistence{RefusesWrites: true, SnapshotFailed: true})},
			[]string{"persistence_failing:b:last RDB snapshot failed"}},
		{"a failed snapshot that refuses nothing (no save points)", []Node{node("a", &redisroute.NodePersistence{SnapshotFailed: true})}, nil},
		{"a failed AOF write", []Node{node("a", &redisroute.NodePersistence{RefusesWrites: true, AOFFailed: true})},
			[]string{"persistence_failing:a:writes its AOF again"}},
		{"unread and unreachable nodes are not judged", []Node{node("a", nil), {Addr: "b", Disk: &redisroute.NodePersistence{RefusesWrites: true}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := diskFindings(tc.nodes)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings %+v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				parts := strings.SplitN(w, ":", 3)
				if got[i].Code != parts[0] || got[i].Node != parts[1] || !strings.Contains(got[i].Message, parts[2]) || got[i].Severity != Critical {
					t.Errorf("finding %d = %v %s on %s %q, want critical %s on %s saying %q", i, got[i].Severity, got[i].Code, got[i].Node, got[i].Message, parts[0], parts[1], parts[2])
				}
			}
		})
	}
}
