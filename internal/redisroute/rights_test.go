package redisroute_test

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// A user narrowed the usual way (+@all -@dangerous) reads and writes but
// is denied INFO, without which no acknowledged write is ever reported
// done (its proof reads the replicas' offsets): every booking fails, on
// every node. CheckRights names the denial on each node before anything
// is sent, without running the commands it checks: the ones that would
// write leave no key. A user with exactly the router's rights is denied
// nothing; one whose keys are not Apollo's is denied its keyed commands
// for their keys, and its channels likewise (SUNSUBSCRIBE is not
// checked: Redis lets anyone leave a channel). A user denied MULTI or
// DISCARD, which only the check needs, is denied that, since the others
// cannot be asked without it (nothing ran: a refused DISCARD leaves a
// transaction open on a connection that is then closed).
func TestCheckRightsNamesWhatEachNodeDeniesWithoutRunningIt(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ctx := ctxFor(t, 60*time.Second)
	rights := redisroute.RouterRights()
	exact := redisroute.ACLRules(rights)
	users := []struct {
		name  string
		rules []string
		want  []string
	}{
		{"exact", exact, nil},
		{"nodanger", []string{"~*", "&*", "+@all", "-@dangerous"}, []string{"info"}},
		{"noasking", append(slices.Clone(exact), "-asking"), []string{"asking"}},
		{"otherkeys", append(slices.Clone(exact), "resetkeys", "~other:*", "resetchannels", "&other:*"),
			[]string{"set (keys)", "exists (keys)", "eval (keys)", "del (keys)", "ssubscribe (channels)", "spublish (channels)"}},
		{"readwrite", []string{"~*", "&*", "-@all", "+@read", "+@write", "+@connection", "+cluster|slots"}, []string{"multi"}},
		{"nodiscard", append(slices.Clone(exact), "-discard"), []string{"discard"}},
	}
	for _, u := range users {
		if err := c.SetUser(ctx, u.name, append([]string{"reset", "on", ">pw"}, u.rules...)...); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := routerFromFlags(t, ctx, prometheus.NewRegistry(), "--redis-addrs", c.Addrs()[0], "--redis-user", u.name, "--redis-password", "pw")
			denied, unknown := r.CheckRights(ctx, rights)
			if len(unknown) > 0 {
				t.Fatalf("nodes not asked: %v", unknown)
			}
			if u.want == nil {
				if len(denied) > 0 {
					t.Fatalf("denied %v, want nothing", denied)
				}
				return
			}
			if len(denied) != len(c.Nodes()) {
				t.Fatalf("denied on %d nodes, want all %d: %v", len(denied), len(c.Nodes()), denied)
			}
			for _, d := range denied {
				if !slices.Equal(d.Denied, u.want) {
					t.Errorf("%s denies %q, want %q", d.Addr, d.Denied, u.want)
				}
			}
		})
	}
	for _, n := range c.Nodes() {
		cl := n.Client()
		keys, err := cl.Keys(ctx, "apollo:*").Result()
		cl.Close()
		if err != nil || len(keys) > 0 {
			t.Errorf("%s holds %v after the checks (%v): a checked command ran", n.Addr, keys, err)
		}
	}
}

// An ACL narrowed while Apollo runs (an ACL file loaded again, a rule
// pushed to some nodes) is seen within a rights check: the node that now
// denies INFO is exported as denying one right, the others as denying
// none, and once the right is given back the node reads 0 again.
func TestARightRevokedWhileRunningIsExportedForItsNode(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	ctx := ctxFor(t, 60*time.Second)
	if err := c.SetUser(ctx, "apollo", append([]string{"on", ">pw"}, redisroute.ACLRules(redisroute.RouterRights())...)...); err != nil {
		t.Fatal(err)
	}
	cfg := redisroute.DefaultConfig()
	cfg.Addrs, cfg.Username, cfg.Password = c.Addrs()[:1], "apollo", "pw"
	cfg.Rights, cfg.RightsCheckInterval = redisroute.RouterRights(), 100*time.Millisecond
	reg := prometheus.NewRegistry()
	r, err := redisroute.New(ctx, cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	denied := func(node string) float64 { v, _ := counter(t, reg, "apollo_redis_rights_denied", node); return v }
	if all, series := counter(t, reg, "apollo_redis_rights_denied", ""); all != 0 || series != len(c.Nodes()) {
		t.Fatalf("at start: %v rights denied over %d series, want 0 over %d", all, series, len(c.Nodes()))
	}

	narrowed := c.Replicas(ctx, 1)[0]
	acl := func(rule string) {
		cl := narrowed.Client()
		defer cl.Close()
		if err := cl.Do(ctx, "ACL", "SETUSER", "apollo", rule).Err(); err != nil {
			t.Fatal(err)
		}
	}
	acl("-info")
	waitFor(t, 10*time.Second, "INFO revoked on "+narrowed.Addr+" exported", func() bool { return denied(narrowed.Addr) == 1 })
	if all, _ := counter(t, reg, "apollo_redis_rights_denied", ""); all != 1 {
		t.Errorf("%v rights denied over the cluster, want the 1 of %s", all, narrowed.Addr)
	}
	acl("+info")
	waitFor(t, 10*time.Second, "INFO given back on "+narrowed.Addr, func() bool { return denied(narrowed.Addr) == 0 })
}
