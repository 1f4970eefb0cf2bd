package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// migrateBatch is how many keys one MIGRATE moves, as redis-cli's
// --cluster-pipeline does.
const migrateBatch = 100

// OpenMigration starts moving the slot of from that holds the most keys to
// the primary `to`, as redis-cli --cluster reshard does, and stops
// halfway: the slot is IMPORTING on `to` and MIGRATING on from, and the
// first half of its keys are moved, as a reshard that was interrupted
// (redis-cli killed, the operator's host lost) leaves it. Clients meet ASK
// for the keys moved and for keys created since, and TRYAGAIN for a
// command whose keys are on both sides. finish moves the rest and gives
// the slot to `to` on every primary; it is also what to call if
// OpenMigration fails after it began.
func (c *Cluster) OpenMigration(ctx context.Context, from, to *Node) (slot int, finish func(context.Context) error, err error) {
	slot, err = c.busiestSlot(ctx, from)
	if err != nil {
		return 0, nil, err
	}
	finish = func(ctx context.Context) error { return c.finishMigration(ctx, slot, from, to) }
	fc, tc := from.Client(), to.Client()
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
		if err := c.migrateKeys(ctx, fc, to, half[:n]); err != nil {
			return slot, finish, err
		}
		half = half[n:]
	}
	return slot, finish, nil
}

// busiestSlot returns the slot served by n that holds the most keys (the
// first of those, on a tie).
func (c *Cluster) busiestSlot(ctx context.Context, n *Node) (int, error) {
	view, err := c.view(ctx, n)
	if err != nil {
		return 0, err
	}
	cl := n.Client()
	defer cl.Close()
	best, most := -1, int64(-1)
	for _, v := range view {
		if v.ID != n.ID() {
			continue
		}
		for _, r := range v.SlotRanges() {
			for slot := r[0]; slot <= r[1]; slot++ {
				k, err := cl.ClusterCountKeysInSlot(ctx, slot).Result()
				if err != nil {
					return 0, fmt.Errorf("keys in slot %d on %s: %w", slot, n.Addr, err)
				}
				if k > most {
					best, most = slot, k
				}
			}
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("%s serves no slot", n.Addr)
	}
	return best, nil
}

// migrateKeys moves keys from the node of fc to `to` with one MIGRATE,
// without REPLACE: a key on both sides is an error, not overwritten.
func (c *Cluster) migrateKeys(ctx context.Context, fc *redis.Client, to *Node, keys []string) error {
	args := []any{"MIGRATE", to.host(), strconv.Itoa(portOf(to.Addr)), "", 0, 5000}
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

// finishMigration moves the keys of slot left on from to `to`, then
// assigns the slot to `to`: on `to`, on from, and on the other primaries
// (which gossip would tell, later).
func (c *Cluster) finishMigration(ctx context.Context, slot int, from, to *Node) error {
	fc := from.Client()
	defer fc.Close()
	for {
		keys, err := fc.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			return fmt.Errorf("keys of slot %d on %s: %w", slot, from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		if err := c.migrateKeys(ctx, fc, to, keys); err != nil {
			return err
		}
	}
	others, err := c.SlotCounts(ctx) // the primaries
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range []*Node{to, from} {
		cl := n.Client()
		if err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.ID()).Err(); err != nil {
			errs = append(errs, fmt.Errorf("slot %d to %s, on %s: %w", slot, to.Addr, n.Addr, err))
		}
		cl.Close()
	}
	for n := range others {
		if n != to && n != from && n.State() == Running {
			cl := n.Client()
			_ = cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.ID()).Err() // gossip tells it anyway
			cl.Close()
		}
	}
	return errors.Join(errs...)
}
