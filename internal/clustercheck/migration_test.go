package clustercheck

import (
	"strings"
	"testing"
)

// A slot left open is named on both of its nodes, with the other's
// address; what is not a migration marker is left alone.
func TestEveryOpenSlotIsAFindingOnBothItsNodes(t *testing.T) {
	nodes := []Node{
		{Addr: "10.0.0.1:6379", ID: "aaa", OpenSlots: []string{"[42->-bbb]"}},
		{Addr: "10.0.0.2:6379", ID: "bbb", OpenSlots: []string{"[42-<-aaa]", "[7->-zzz]", "[oops]", "[->-bbb]"}},
		{Addr: "10.0.0.3:6379", ID: "ccc"},
	}
	var got []string
	for _, f := range migrationFindings(nodes) {
		if f.Severity != Warning || f.Code != "slot_migration_open" {
			t.Errorf("finding %+v", f)
		}
		got = append(got, f.Node+" "+f.Message[:strings.Index(f.Message, ": its keys")])
	}
	want := []string{
		"10.0.0.1:6379 slot 42 is migrating to 10.0.0.2:6379",
		"10.0.0.2:6379 slot 42 is importing from 10.0.0.1:6379",
		"10.0.0.2:6379 slot 7 is migrating to node zzz",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
