package redisroute_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A slot left half moved (an interrupted reshard) serves a key on either
// side, through ASK, while a command that needs keys of both sides does
// not run (TRYAGAIN) until the move is finished; each is counted, so that
// an alert can tell a migration left open.
func TestAMigrationLeftOpenServesEachSideAndCountsWhatItSplits(t *testing.T) {
	c := clustertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	r := newRouterOn(t, c, reg)
	var keys []any
	for i := range 10 {
		k := fmt.Sprintf("{m}:%d", i)
		keys = append(keys, k)
		if res := r.Do(ctx, redisroute.Write("SET", k, i)); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	from := c.Primary(ctx, 0)
	for shard := range c.Config().Primaries { // the primary serving {m}
		cl := c.Primary(ctx, shard).Client()
		err := cl.Get(ctx, "{m}:0").Err()
		cl.Close()
		if err == nil {
			from = c.Primary(ctx, shard)
			break
		}
	}
	to := c.Primary(ctx, 0)
	if to == from {
		to = c.Primary(ctx, 1)
	}
	_, finish, err := c.OpenMigration(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		res := r.Do(ctx, redisroute.Cmd{Args: []any{"GET", k}, Key: k.(string), Fresh: true})
		if res.Err != nil || res.Val != fmt.Sprint(i) {
			t.Errorf("GET %s while its slot is half moved = %v, %v", k, res.Val, res.Err)
		}
	}
	if asks, _ := counter(t, reg, "apollo_redis_redirects_total", "ask"); asks < 5 {
		t.Errorf("%v ASK redirects counted for 5 keys moved", asks)
	}
	mget := redisroute.Cmd{Args: append([]any{"MGET"}, keys...), Key: "{m}:0", Fresh: true}
	short, stop := context.WithTimeout(ctx, time.Second)
	res := r.Do(short, mget)
	stop()
	if !errors.Is(res.Err, redisroute.ErrUnavailable) || !strings.Contains(res.Err.Error(), "TRYAGAIN") {
		t.Errorf("MGET of keys on both sides = %v, %v; want it not run (TRYAGAIN)", res.Val, res.Err)
	}
	if n, _ := counter(t, reg, "apollo_redis_redirects_total", "tryagain"); n == 0 {
		t.Error("no TRYAGAIN counted")
	}
	// A second of TRYAGAIN, retried: the slot has kept redirecting that long.
	if s, _ := counter(t, reg, "apollo_redis_slot_migrating_seconds", ""); s <= 0 {
		t.Errorf("apollo_redis_slot_migrating_seconds = %v after a second of TRYAGAIN", s)
	}
	if err := finish(ctx); err != nil {
		t.Fatal(err)
	}
	if res := r.Do(ctx, mget); res.Err != nil {
		t.Errorf("MGET after the move = %v", res.Err)
	}
}
