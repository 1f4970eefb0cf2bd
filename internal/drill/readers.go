package drill

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// The client configurations a drill compares.
const (
	ConfigLegacy  = "legacy-2019" // the 2019 setup, emulated by redisroute
	ConfigGoRedis = "go-redis-v9" // today's go-redis ClusterClient with ReadOnly, as users configure it
	ConfigApollo  = "apollo"      // Apollo's router with its default policy
)

// ConfigNames lists every client configuration.
func ConfigNames() []string { return []string{ConfigLegacy, ConfigGoRedis, ConfigApollo} }

// ParseConfigs parses a comma-separated list of configuration names.
func ParseConfigs(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case ConfigLegacy, ConfigGoRedis, ConfigApollo:
			out = append(out, name)
		case "":
		default:
			return nil, fmt.Errorf("unknown config %q (want %s)", name, strings.Join(ConfigNames(), ", "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no config given (want some of %s)", strings.Join(ConfigNames(), ", "))
	}
	return out, nil
}

// batchReader is the batch availability read, for one client configuration.
// Every configuration reads the same driver hashes; Apollo and legacy-2019
// go through the driver store, the same code path as POST /v1/drivers/batch-get.
// Each connects from source when it is set, and as creds' user when they
// are given: Apollo reads the password file for every new connection, as
// apollo serve does (--redis-password-file); go-redis is given the
// password read once at start, as a client set up from a secret is, and
// so is legacy-2019, as Apollo was.
func batchReader(ctx context.Context, name string, addrs []string, source netip.Addr, creds *Credentials, log *slog.Logger) (Reader, func(), error) {
	var user, password string
	if creds != nil {
		user, password = creds.User, creds.Password()
	}
	switch name {
	case ConfigGoRedis:
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadOnly: true, Dialer: redisroute.Dialer(source, nil),
			Username: user, Password: password})
		if err := cc.Ping(ctx).Err(); err != nil {
			cc.Close()
			return nil, nil, fmt.Errorf("go-redis: %w", err)
		}
		return goRedisBatch(cc), func() { cc.Close() }, nil
	case ConfigLegacy, ConfigApollo:
		cfg := redisroute.DefaultConfig()
		cfg.Addrs, cfg.SourceAddr = addrs, source
		cfg.Username, cfg.Password = user, password
		if creds != nil && name == ConfigApollo {
			cfg.PasswordFile = creds.File
		}
		if name == ConfigLegacy {
			cfg.Policy = redisroute.Legacy2019
			cfg.ReadTimeout = 3 * time.Second // go-redis v6's default
		}
		r, err := redisroute.New(ctx, cfg, nil, log)
		if err != nil {
			return nil, nil, err
		}
		store, err := redisstore.NewDrivers(r, redisstore.DefaultConfig(), driverRules())
		if err != nil {
			r.Close()
			return nil, nil, err
		}
		return storeBatch(store), func() { r.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown config %q", name)
}

func storeBatch(s *redisstore.Drivers) Reader {
	return func(ctx context.Context, ids []string) int {
		b, err := s.BatchGet(ctx, ids)
		if err != nil {
			return 0
		}
		// BatchGet answers a repeated id once; count every requested id.
		found := make(map[string]bool, len(b.Drivers))
		for _, d := range b.Drivers {
			found[d.ID] = true
		}
		ok := 0
		for _, id := range ids {
			if found[id] {
				ok++
			}
		}
		return ok
	}
}

func goRedisBatch(cc *redis.ClusterClient) Reader {
	fields := redisstore.DriverFields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.(string)
	}
	return func(ctx context.Context, ids []string) int {
		cmds, _ := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids {
				p.HMGet(ctx, redisstore.DriverKey(id), names...)
			}
			return nil
		})
		ok := 0
		for _, c := range cmds {
			vals, err := c.(*redis.SliceCmd).Result()
			if err == nil && len(vals) > 0 && vals[0] != nil {
				ok++
			}
		}
		return ok
	}
}
