package localcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// migrateBatch is how many keys one MIGRATE moves, as redis-cli's
// --cluster-pipeline does.
const migrateBatch = 100

// OpenMigration starts moving the slot of from that holds the most keys to
// the primary `to`, as redis-cli --cluster reshard does, and stops
// halfway: the slot is IMPORTING on `to` and MIGRATING on from, and half of
// its keys (of the first thousand) are moved, as a reshard that was
// interrupted (redis-cli killed, the operator's host lost) leaves it.
// Clients meet ASK for the keys moved and for keys created since, and
// TRYAGAIN for a command whose keys are on both sides. finish moves the
// rest and gives the slot to `to`; it is also what to call if
// OpenMigration fails after it began (it then undoes what was begun).
func (c *Cluster) OpenMigration(ctx context.Context, from, to *Node) (slot int, finish func(context.Context) error, err error) {
	slot, err = c.busiestSlot(ctx, from)
	if err != nil {
		return 0, nil, err
	}
	finish = func(ctx context.Context) error { return c.finishMigration(ctx, slot, from, to) }
	fc, tc := migrationClient(from), migrationClient(to)
	defer fc.Close()
	defer tc.Close()
	// The order redis-cli uses: the target first, so that no ASK is sent
	// before the target takes it.
	if err := tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID()).Err(); err != nil {
		return slot, finish, fmt.Errorf("slot %d importing on %s: %w", slot, to.Addr, err)
	}
	if err := fc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID()).Err(); err != nil {
		return slot, finish, fmt.Errorf("slot %d migrating on %s: %w", slot, from.Addr, err)
	}
	keys, err := fc.ClusterGetKeysInSlot(ctx, slot, 10*migrateBatch).Result()
	if err != nil {
		return slot, finish, fmt.Errorf("keys of slot %d on %s: %w", slot, from.Addr, err)
	}
	for half := keys[:(len(keys)+1)/2]; len(half) > 0; {
		n := min(len(half), migrateBatch)
		if err := c.migrateKeys(ctx, fc, to, half[:n], false); err != nil {
			return slot, finish, err
		}
		half = half[n:]
	}
	return slot, finish, nil
}

// migrationClient is a client of n that waits for a MIGRATE's own
// timeout (5 s) and more, rather than the cluster clients' second.
func migrationClient(n *Node) *redis.Client { return n.clientReading(10 * time.Second) }

// busiestSlot returns the slot served by n that holds the most keys (the
// first of those, on a tie), counted in one pipeline.
func (c *Cluster) busiestSlot(ctx context.Context, n *Node) (int, error) {
	view, err := c.view(ctx, n)
	if err != nil {
		return 0, err
	}
	cl := n.Client()
	defer cl.Close()
	var slots []int
	var counts []*redis.IntCmd
	_, err = cl.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, v := range view {
			if v.ID != n.ID() {
				continue
			}
			for _, r := range v.SlotRanges() {
				for slot := r[0]; slot <= r[1]; slot++ {
					slots, counts = append(slots, slot), append(counts, p.ClusterCountKeysInSlot(ctx, slot))
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("keys in the slots of %s: %w", n.Addr, err)
	}
	best, most := -1, int64(-1)
	for i, cmd := range counts {
		if k := cmd.Val(); k > most {
			best, most = slots[i], k
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("%s serves no slot", n.Addr)
	}
	return best, nil
}

// migrateKeys moves keys from the node of fc to `to` with one MIGRATE.
// Without replace a key on both sides is an error; with it the source's
// copy wins, as it is the one clients used while the slot was migrating
// (a key the source holds is served there).
func (c *Cluster) migrateKeys(ctx context.Context, fc *redis.Client, to *Node, keys []string, replace bool) error {
	args := []any{"MIGRATE", to.host(), strconv.Itoa(portOf(to.Addr)), "", 0, 5000}
	if replace {
		args = append(args, "REPLACE")
	}
	switch {
	case c.cfg.User != "":
		args = append(args, "AUTH2", c.cfg.User, c.cfg.Password)
	case c.cfg.Password != "":
		args = append(args, "AUTH", c.cfg.Password)
	}
	args = append(args, "KEYS")
	for _, k := range keys {
		args = append(args, k)
	}
	if err := fc.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("MIGRATE %d keys to %s: %w", len(keys), to.Addr, err)
	}
	return nil
}

// finishMigration ends the migration of slot from from to `to`: if from
// never began to send it, the target's IMPORTING is undone (no key went
// there: nothing sent ASK); else the keys left on from are moved (a MIGRATE
// that failed halfway may have left copies on `to`: REPLACE) and the slot
// is given to `to`: on `to`, on from, then on the other primaries (which
// gossip would tell, later).
func (c *Cluster) finishMigration(ctx context.Context, slot int, from, to *Node) error {
	fc, tc := migrationClient(from), migrationClient(to)
	defer fc.Close()
	defer tc.Close()
	open, err := ownOpenSlots(ctx, fc)
	if err != nil {
		return fmt.Errorf("slot %d: %w", slot, err)
	}
	if !slices.Contains(open, fmt.Sprintf("[%d->-%s]", slot, to.ID())) {
		if err := tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err(); err != nil {
			return fmt.Errorf("slot %d, never sent by %s, made stable on %s: %w", slot, from.Addr, to.Addr, err)
		}
		return nil
	}
	for {
		keys, err := fc.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			return fmt.Errorf("keys of slot %d on %s: %w", slot, from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		if err := c.migrateKeys(ctx, fc, to, keys, true); err != nil {
			return err
		}
	}
	for _, cl := range []*redis.Client{tc, fc} {
		if err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.ID()).Err(); err != nil {
			return fmt.Errorf("slot %d to %s, on %s: %w", slot, to.Addr, cl.Options().Addr, err)
		}
	}
	primaries, err := c.SlotCounts(ctx)
	if err != nil {
		return nil // gossip tells them
	}
	for n := range primaries {
		if n != to && n != from && n.State() == Running {
			cl := n.Client()
			_ = cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.ID()).Err() // gossip tells it anyway
			cl.Close()
		}
	}
	return nil
}

// ownOpenSlots returns the open slot migrations of the node of cl, from
// its own line of CLUSTER NODES ("[slot->-id]", "[slot-<-id]"): only the
// two nodes of a migration know of it.
func ownOpenSlots(ctx context.Context, cl *redis.Client) ([]string, error) {
	s, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", cl.Options().Addr, err)
	}
	for _, v := range parseClusterNodes(s) {
		if v.Has("myself") {
			return slices.DeleteFunc(slices.Clone(v.Slots), func(s string) bool { return !strings.HasPrefix(s, "[") }), nil
		}
	}
	return nil, fmt.Errorf("CLUSTER NODES on %s has no line of its own", cl.Options().Addr)
}
