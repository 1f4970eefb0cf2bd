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
// every replica holds them, so that replica reads see them all. A store
// call that fails as unavailable (a primary of a fresh cluster that is not
// answering yet on a busy machine: the router fails a write fast rather
// than wait) is tried again for up to seedPatience; both calls are safe to
// repeat.
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
				if err := patiently(ctx, func() error {
					_, err := store.Heartbeat(ctx, ids[i], loc, now)
					return err
				}); err != nil {
					errs[w] = err
					break
				}
				err := patiently(ctx, func() error {
					_, err := store.Apply(ctx, ids[i], driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now)
					return err
				})
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

// seedPatience bounds how long one seeding call is tried again.
const seedPatience = 30 * time.Second

// patiently calls f until it does not fail as unavailable, for up to
// seedPatience, waiting 100 ms doubling to 1 s between tries.
func patiently(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(seedPatience)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := f()
		if !errors.Is(err, redisstore.ErrUnavailable) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}
