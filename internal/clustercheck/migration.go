package clustercheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// readOpenSlots returns the node's open slot migrations, as its own line of
// CLUSTER NODES shows them (only the two nodes of a migration know of it):
// "[slot->-target id]" while it sends a slot, "[slot-<-source id]" while
// it takes one. nil when there is none or the view cannot be read.
func readOpenSlots(ctx context.Context, c *redis.Client) []string {
	view, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(view, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !has(strings.Split(f[2], ","), "myself") {
			continue
		}
		var open []string
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				open = append(open, s)
			}
		}
		return open
	}
	return nil
}

// migrationFindings warns of every slot left open: a reshard interrupted
// (redis-cli killed, its host lost) leaves a slot MIGRATING on one primary
// and IMPORTING on another, its keys on both sides, until someone finishes
// it. Clients meet ASK for the keys moved and TRYAGAIN for every command
// that needs keys of both sides, for as long as it stays open.
func migrationFindings(nodes []Node) []Finding {
	addr := map[string]string{}
	for _, n := range nodes {
		addr[n.ID] = n.Addr
	}
	var out []Finding
	for _, n := range nodes {
		for _, s := range n.OpenSlots {
			slot, dir, id, ok := parseOpenSlot(s)
			if !ok {
				continue
			}
			other := addr[id]
			if other == "" {
				other = "node " + id
			}
			out = append(out, Finding{Severity: Warning, Code: "slot_migration_open", Node: n.Addr, Message: fmt.Sprintf(
				"slot %s is %s %s: its keys are on both nodes, clients meet ASK for the moved ones and TRYAGAIN for commands that need both sides; if no reshard is running, finish it (redis-cli --cluster fix)",
				slot, dir, other)})
		}
	}
	return out
}

// parseOpenSlot reads "[slot->-id]" (migrating to id) or "[slot-<-id]"
// (importing from id).
func parseOpenSlot(s string) (slot, dir, id string, ok bool) {
	inner, found := strings.CutPrefix(s, "[")
	if inner, found = strings.CutSuffix(inner, "]"); !found {
		return "", "", "", false
	}
	if slot, id, found = strings.Cut(inner, "->-"); found {
		return slot, "migrating to", id, slot != "" && id != ""
	}
	if slot, id, found = strings.Cut(inner, "-<-"); found {
		return slot, "importing from", id, slot != "" && id != ""
	}
	return "", "", "", false
}
