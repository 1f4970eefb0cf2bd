package redisroute_test

import (
	"context"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// TestFullOutageFailsFastAndRecovers hangs every node. Calls must fail fast
// instead of each waiting for its deadline, and succeed again once the
// nodes resume.
func TestFullOutageFailsFastAndRecovers(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	keys := seed(t, c)
	const callTimeout = 2 * time.Second
	r := newRouter(t, c, func(cfg *redisroute.Config) { cfg.CallTimeout = callTimeout })
	outage := 4 * time.Second
	fault := drill.FaultFunc{Label: "pause every node",
		InjectFn: func(context.Context) error {
			for _, n := range c.Nodes() {
				if err := n.Pause(); err != nil {
					return err
				}
			}
			return nil
		},
		HealFn: func(ctx context.Context) error { return nil },
	}
	plan := drill.Plan{Workers: 8, Pipeline: 20, Duration: 2*time.Second + outage, FaultAt: 2 * time.Second, CallTimeout: callTimeout}
	rep, err := drill.RunLoad(context.Background(), plan, keys, apolloReader(r), fault, nil)
	if err != nil {
		t.Fatal(err)
	}
	outageCalls := 0
	for _, s := range rep.PerSecond[2:] {
		outageCalls += s.Calls
	}
	// Had every call waited for its deadline, the workers could have made
	// at most this many calls during the outage.
	waiting := plan.Workers * (int(outage/callTimeout) + 1)
	t.Logf("during the outage: %d calls (%d if each had waited for its deadline)", outageCalls, waiting)
	if outageCalls < 10*waiting {
		t.Errorf("calls did not fail fast: %d calls in %s, want well over %d", outageCalls, outage, 10*waiting)
	}
	for _, n := range c.Nodes() {
		if err := n.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	// Once the nodes answer again, so does every call.
	read := apolloReader(r)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := read(context.Background(), keys[:20])
		if ok == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reads still failing 30s after the nodes resumed (%d of 20 ok)", ok)
		}
		time.Sleep(100 * time.Millisecond)
	}
	recovered := 0
	for i := 0; i < 50; i++ {
		recovered += read(context.Background(), keys[i*20:(i+1)*20])
	}
	if recovered != 1000 {
		t.Errorf("after recovery %d of 1000 reads succeeded", recovered)
	}
}
