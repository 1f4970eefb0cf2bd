package localcluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// A lossy node loses packets but no request: every PING is answered, the
// lost packets sent again by TCP, and the firewall counted what it
// dropped. Restored, nothing more is dropped and no rule is left.
func TestALossyNodeLosesPacketsButAnswersEveryRequest(t *testing.T) {
	clustertest.NeedFirewall(t)
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas, cfg.OwnAddrs = 3, 0, true
	})
	ctx := ctxFor(t, 90*time.Second)
	n := c.Nodes()[0]
	for _, bad := range []float64{0, 1, -0.1} {
		if _, err := c.Lossy(ctx, n, bad); err == nil {
			t.Errorf("Lossy took a fraction of %v", bad)
		}
	}
	if _, err := c.Lossy(ctx, n, 0.5, "127.0.0.1"); err == nil {
		t.Error("Lossy took a host that is not the cluster's")
	}
	// No retry, and time for TCP to send a lost packet again a few times.
	cl := redis.NewClient(&redis.Options{Addr: n.Addr, Username: c.Config().User, Password: c.Config().Password,
		MaxRetries: -1, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second})
	defer cl.Close()
	// pings sends 100 PINGs and says how many took 150 ms or more (TCP
	// sends a lost packet again after 200 ms at the earliest).
	pings := func() (late int) {
		t.Helper()
		for i := range 100 {
			start := time.Now()
			if err := cl.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING %d: %v", i, err)
			}
			if time.Since(start) >= 150*time.Millisecond {
				late++
			}
		}
		return late
	}
	pings()
	if d, err := c.Dropped(ctx); err != nil || d != 0 {
		t.Fatalf("dropped %d packets before any loss (%v)", d, err)
	}

	restore, err := c.Lossy(ctx, n, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	late := pings()
	dropped, err := c.Dropped(ctx)
	if err != nil || dropped == 0 {
		t.Fatalf("dropped %d packets of 200 or more at 5 %% (%v)", dropped, err)
	}
	t.Logf("at 5 %% loss: %d packets dropped, %d of 100 PINGs took 150 ms or more", dropped, late)

	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	pings()
	if d, err := c.Dropped(ctx); err != nil || d != 0 {
		t.Errorf("the chain still counts %d drops after restore (%v): a rule is left", d, err)
	}
	if s := chains(t); strings.Contains(s, "statistic") && strings.Contains(s, "APOLLO-") {
		t.Errorf("restore left a lossy rule:\n%s", s)
	}
}
