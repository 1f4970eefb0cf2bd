package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// CommandsProcessed is the sum of every node's total_commands_processed
// (INFO stats): the Redis work done so far, as Redis counts it. Take two
// and subtract to count what happened in between.
func (c *Cluster) CommandsProcessed(ctx context.Context) (int64, error) {
	var sum int64
	for _, n := range c.Nodes() {
		info, err := n.Client().Info(ctx, "stats").Result()
		if err != nil {
			return 0, fmt.Errorf("INFO stats on %s: %w", n.Addr, err)
		}
		sum += InfoField(info, "total_commands_processed")
	}
	return sum, nil
}

// InfoField is an integer field of an INFO reply (0 if absent).
func InfoField(info, name string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
