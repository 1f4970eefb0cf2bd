package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// An existing cluster can only be faulted through Redis itself: CLIENT
// PAUSE makes a replica accept connections and answer nothing, the hang of
// replica-hang. Processes cannot be killed from here, so the other
// scenarios need a local cluster.
func externalFault(ctx context.Context, addrs []string, cfg Config) (Fault, error) {
	if cfg.Scenario != ReplicaHang {
		return nil, fmt.Errorf("scenario %s acts on the nodes' processes, network or users, so it needs the local cluster the drill starts itself; on an existing cluster (--redis-addrs) only replica-hang (CLIENT PAUSE) can run", cfg.Scenario)
	}
	rc := redisroute.DefaultConfig()
	rc.Addrs = addrs
	r, err := redisroute.New(ctx, rc, nil, nil)
	if err != nil {
		return nil, err
	}
	var target string
	for _, n := range r.Nodes() {
		if n.Shard == 0 && n.Role == "replica" {
			target = n.Addr
			break
		}
	}
	r.Close()
	if target == "" {
		return nil, errors.New("replica-hang needs a replica in the first shard, and the cluster has none")
	}
	// The pause lasts until the end of the run. It cannot be lifted early:
	// CLIENT UNPAUSE, like every command, waits out a CLIENT PAUSE ALL.
	end := cfg.Plan.HealAt
	if end == 0 {
		end = cfg.Plan.Duration
	}
	pause := end - cfg.Plan.FaultAt
	var until time.Time
	do := func(ctx context.Context, args ...any) error {
		c := redis.NewClient(&redis.Options{Addr: target, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second,
			Protocol: 2, DisableIdentity: true})
		defer c.Close()
		return c.Do(ctx, args...).Err()
	}
	return FaultFunc{
		Label: "replica hang (CLIENT PAUSE ALL) " + target,
		InjectFn: func(ctx context.Context) error {
			until = time.Now().Add(pause)
			return do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL")
		},
		HealFn: func(ctx context.Context) error {
			sleep(ctx, time.Until(until))
			for {
				err := do(ctx, "PING")
				if err == nil || ctx.Err() != nil {
					return err
				}
				sleep(ctx, 100*time.Millisecond)
			}
		},
	}, nil
}

// executeExternal drills an existing cluster: seed drill drivers, run each
// configuration in turn with the fault, and remove the drill drivers.
func executeExternal(ctx context.Context, cfg Config, addrs []string, out io.Writer, log *slog.Logger, res *Result) error {
	fmt.Fprintf(out, "seeding %d drill drivers (ids %s...) into %v...\n", cfg.Drivers, externalID(0), addrs)
	ids, err := seedDriversWith(ctx, addrs, cfg.Drivers, 1, externalID)
	if err != nil {
		return err
	}
	defer removeDrivers(context.WithoutCancel(ctx), addrs, ids, out)
	for _, name := range cfg.Configs {
		fault, err := externalFault(ctx, addrs, cfg)
		if err != nil {
			return err
		}
		read, closeFn, err := batchReader(ctx, name, addrs, netip.Addr{}, nil, log)
		if err != nil {
			return fmt.Errorf("config %s: %w", name, err)
		}
		fmt.Fprintf(out, "\n== %s: %s at %s ==\n", name, fault.Name(), cfg.Plan.FaultAt)
		rep, err := RunLoad(ctx, cfg.Plan, ids, read, fault, func(s Second) { WriteSecond(out, name, s) })
		closeFn()
		rep.Name = name
		res.Fault = fault.Name()
		res.Configs = append(res.Configs, rep)
		if err != nil {
			return fmt.Errorf("config %s: %w", name, err)
		}
	}
	return nil
}

func externalID(i int) string { return fmt.Sprintf("apollo-drill-%06d", i) }

// removeDrivers deletes the drill's drivers and their geo index entries.
func removeDrivers(ctx context.Context, addrs, ids []string, out io.Writer) {
	rc := redisroute.DefaultConfig()
	rc.Addrs, rc.Policy = addrs, redisroute.Primary
	r, err := redisroute.New(ctx, rc, nil, nil)
	if err != nil {
		fmt.Fprintf(out, "could not remove the drill drivers: %v\n", err)
		return
	}
	defer r.Close()
	failed := 0
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		var cmds []redisroute.Cmd
		for _, id := range batch {
			cmds = append(cmds, redisroute.Cmd{Args: []any{"HGET", redisstore.DriverKey(id), "cell"}, Key: redisstore.DriverKey(id), Fresh: true})
		}
		var dels []redisroute.Cmd
		for i, res := range r.Exec(ctx, cmds) {
			if cell, ok := res.Val.(string); ok && cell != "" {
				dels = append(dels, redisroute.Write("ZREM", redisstore.GeoKey(cell), batch[i]))
			}
			dels = append(dels, redisroute.Write("DEL", redisstore.DriverKey(batch[i])))
		}
		for _, res := range r.Exec(ctx, dels) {
			if res.Err != nil {
				failed++
			}
		}
	}
	fmt.Fprintf(out, "removed the %d drill drivers (%d deletions failed)\n", len(ids), failed)
}
