package fleet

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Config tunes membership and leases.
type Config struct {
	// Partitions is how many parts the open-bookings index is split into.
	// Every instance of a fleet must use the same number. Many more than
	// instances, so shares stay even, and than shards, so the index's
	// commands spread over every shard.
	Partitions int
	// LeaseTTL is how long a lease and a heartbeat last unrenewed: how
	// soon a dead instance's share is taken over.
	LeaseTTL time.Duration
	// RenewEvery is how often an instance heartbeats, renews its leases
	// and rebalances: how soon a new or departed member's share moves.
	RenewEvery time.Duration
}

// DefaultConfig returns the defaults: 64 partitions, 5 s leases renewed each second.
func DefaultConfig() Config {
	return Config{Partitions: 64, LeaseTTL: 5 * time.Second, RenewEvery: time.Second}
}

// MaxPartitions bounds Partitions: each partition is a key per slot range.
const MaxPartitions = 1024

// RegisterFlags registers the fleet's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "parts of the open-bookings index, shared out among the instances (the same on every instance)")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, "how long a partition lease and an instance heartbeat last unrenewed: how soon a dead instance's share is taken over")
	fs.DurationVar(&c.RenewEvery, "lease-renew-every", c.RenewEvery, "how often an instance heartbeats, renews its leases and rebalances")
}

// Validate reports an unusable config.
func (c Config) Validate() error {
	if c.Partitions < 1 || c.Partitions > MaxPartitions {
		return fmt.Errorf("fleet: partitions must be 1 to %d, got %d", MaxPartitions, c.Partitions)
	}
	if c.RenewEvery <= 0 || c.LeaseTTL < 2*c.RenewEvery {
		return errors.New("fleet: the lease renewal interval must be positive and the lease time at least twice it")
	}
	return nil
}
