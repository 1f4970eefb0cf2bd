package drill

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/sim"
)

func driverRules() driver.Rules { return driver.DefaultRules() }

// seedDrivers creates n available drivers in Singapore through the real
// driver store (heartbeat, then go_online), 16 at a time, and waits until
// every replica holds them, so that replica reads see them all.
func seedDrivers(ctx context.Context, addrs []string, n int, replicas int) ([]string, error) {
	return seedDriversWith(ctx, addrs, n, replicas, sim.ID)
}

// seedDriversWith is seedDrivers with the ids named by id(i).
func seedDriversWith(ctx context.Context, addrs []string, n int, replicas int, id func(int) string) ([]string, error) {
	cfg := redisroute.DefaultConfig()
	cfg.Addrs, cfg.Policy, cfg.CallTimeout = addrs, redisroute.Primary, 5*time.Second
	r, err := redisroute.New(ctx, cfg, nil, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	store, err := redisstore.NewDrivers(r, redisstore.DefaultConfig(), driverRules())
	if err != nil {
		return nil, err
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id(i)
	}
	city := sim.Singapore()
	const workers = 16
	errs := make([]error, workers)
	var wg sync.WaitGroup
	now := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := w; i < n && errs[w] == nil; i += workers {
				loc := driver.Location{Lat: city.MinLat + rng.Float64()*(city.MaxLat-city.MinLat), Lng: city.MinLng + rng.Float64()*(city.MaxLng-city.MinLng)}
				if _, err := store.Heartbeat(ctx, ids[i], loc, now); err != nil {
					errs[w] = err
					break
				}
				_, err := store.Apply(ctx, ids[i], driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now)
				if err != nil && !errors.Is(err, driver.ErrIllegalTransition) {
					errs[w] = err
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("seed drivers: %w", err)
	}
	if err := r.Barrier(ctx, replicas); err != nil {
		return nil, fmt.Errorf("wait for replicas: %w", err)
	}
	return ids, nil
}
