package redisroute_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A replica that starts refusing Apollo's connections (a password Apollo
// does not know, as in a half-done rotation) is a failed node: every read
// is still answered, with the right value, the node is ejected, and it is
// re-admitted once it takes Apollo's connections again.
func TestAReplicaRefusingItsHandshakeIsEjectedAndReadmitted(t *testing.T) {
	c := clustertest.Start(t)
	keys := seed(t, c)[:200]
	ctx := ctxFor(t, 60*time.Second)
	r := newRouter(t, c)
	read := func() redisroute.Results {
		cmds := make([]redisroute.Cmd, len(keys))
		for i, k := range keys {
			cmds[i] = redisroute.Read("HMGET", k, "status")
		}
		return r.Exec(ctx, cmds)
	}
	if err := read().Err(); err != nil {
		t.Fatalf("before the fault: %v", err)
	}

	bad := c.Replicas(ctx, 0)[0]
	admin := bad.Client()
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "requirepass", "not-apollos").Err(); err != nil {
		t.Fatal(err)
	}
	// Apollo's pooled connections were authenticated before; new ones are not.
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Err(); err != nil {
		t.Logf("client kill: %v", err) // it kills its own connection too
	}
	restore := redis.NewClient(&redis.Options{Addr: bad.Addr, Password: "not-apollos"})
	defer restore.Close()
	t.Cleanup(func() { restore.ConfigSet(context.Background(), "requirepass", "") })

	for i := 0; i < 50; i++ {
		res := read()
		for k, x := range res {
			if x.Err != nil || fmt.Sprint(x.Val) != "[available]" {
				t.Fatalf("read %d, %s: %v, %v (from %s); want [available]", i, keys[k], x.Val, x.Err, x.Node)
			}
		}
	}
	if healthy(r, bad.Addr) {
		t.Fatalf("%s refuses Apollo's connections but is not ejected", bad.Addr)
	}

	if err := restore.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !healthy(r, bad.Addr) {
		if time.Now().After(deadline) {
			t.Fatalf("%s takes connections again but was not re-admitted", bad.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := read().Err(); err != nil {
		t.Fatalf("after re-admission: %v", err)
	}
}

func healthy(r *redisroute.Router, addr string) bool {
	for _, n := range r.Nodes() {
		if n.Addr == addr {
			return n.Healthy
		}
	}
	return false
}
