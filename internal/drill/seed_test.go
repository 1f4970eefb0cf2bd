package drill

import (
	"context"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// A primary that does not answer for a while as the drivers are seeded
// (a fresh cluster on a busy machine) delays the seeding, it does not
// fail it: the router fails a write to a silent primary fast, as it
// should, and the seeder tries it again. Found by a CI run whose drill
// stopped at "seed drivers: ... the primary is not answering".
func TestSeedingOutlastsAPrimaryThatIsNotAnswering(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ctx := context.Background()
	p := c.Primary(ctx, 0)
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	// Well past FailFastAfter, short of the call timeout and node timeout.
	resume := time.AfterFunc(2*time.Second, func() { p.Resume() })
	t.Cleanup(func() { resume.Stop(); p.Resume() })
	const n = 300
	ids, err := seedDrivers(ctx, c.Addrs(), n, 1)
	if err != nil {
		t.Fatalf("seedDrivers: %v", err)
	}
	cfg := redisroute.DefaultConfig()
	cfg.Addrs, cfg.Policy = c.Addrs(), redisroute.Primary
	r, err := redisroute.New(ctx, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	store, err := redisstore.NewDrivers(r, redisstore.DefaultConfig(), driverRules())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		d, err := store.Get(ctx, id)
		if err != nil || d.Status != driver.StatusAvailable {
			t.Fatalf("driver %s after seeding: %+v, %v; want available", id, d, err)
		}
	}
	if len(ids) != n {
		t.Fatalf("%d drivers seeded, want %d", len(ids), n)
	}
}
