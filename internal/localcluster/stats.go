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
	sum, err := c.sumInfo(ctx, "stats", "total_commands_processed")
	return int64(sum), err
}

// CPUSeconds is the CPU every node has used so far (INFO cpu,
// used_cpu_user + used_cpu_sys), in seconds.
func (c *Cluster) CPUSeconds(ctx context.Context) (float64, error) {
	return c.sumInfo(ctx, "cpu", "used_cpu_user", "used_cpu_sys")
}

// sumInfo sums numeric fields of an INFO section over every node.
func (c *Cluster) sumInfo(ctx context.Context, section string, fields ...string) (float64, error) {
	var sum float64
	for _, n := range c.Nodes() {
		info, err := n.Info(ctx, section)
		if err != nil {
			return 0, fmt.Errorf("INFO %s on %s: %w", section, n.Addr, err)
		}
		for _, f := range fields {
			v, _ := strconv.ParseFloat(infoValue(info, f), 64)
			sum += v
		}
	}
	return sum, nil
}

// InfoField is an integer field of an INFO reply (0 if absent).
func InfoField(info, name string) int64 {
	n, _ := strconv.ParseInt(infoValue(info, name), 10, 64)
	return n
}

// infoValue is the value of a field of an INFO reply ("" if absent).
func infoValue(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
