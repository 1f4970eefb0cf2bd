package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// ErrEvictingRedis: a Redis node may delete keys to make room (a
// maxmemory with a policy other than noeviction), so no guarantee about
// the records on it holds.
var ErrEvictingRedis = errors.New("redis nodes may delete Apollo's keys to make room")

// memoryCheckTimeout bounds the check at start: a hung node delays the
// start by this much at most, and is not judged.
const memoryCheckTimeout = 2 * time.Second

// refuseEvicting fails when a node of the cluster may evict keys: a
// booking reported created, a reservation (which frees its driver for a
// second booking) or a lease would vanish without an error when the node
// fills up. The router keeps checking while Apollo runs (a policy changed
// later is exported, logged and alerted on); a node that does not answer
// now is not judged, and is named in a warning.
func refuseEvicting(ctx context.Context, r *redisroute.Router, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, memoryCheckTimeout)
	defer cancel()
	known, unknown := r.Memory(ctx)
	if len(unknown) > 0 {
		log.Warn("could not read INFO memory on some Redis nodes, so whether they evict keys is not known; Apollo's user needs INFO",
			"nodes", strings.Join(unknown, ","))
	}
	var bad []string
	for _, m := range known {
		if m.MayEvict() {
			bad = append(bad, fmt.Sprintf("%s (maxmemory-policy %s, maxmemory %d)", m.Addr, m.Policy, m.Max))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; set maxmemory-policy noeviction on every node (a full node then refuses writes, which Apollo answers 503, instead of deleting records)",
		ErrEvictingRedis, strings.Join(bad, ", "))
}
