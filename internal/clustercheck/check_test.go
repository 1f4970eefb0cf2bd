package clustercheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/clustercheck"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

func TestCheckHealthyClusterThenAKilledReplica(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
		cfg.Persistence = localcluster.PersistenceAOF
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := clustercheck.Options{Addrs: c.Addrs()[:1], ReadPolicy: "replica-preferred"}

	rep, err := clustercheck.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != clustercheck.Info || rep.ClusterState != "ok" || rep.SlotsCovered != 16384 || len(rep.Shards) != 3 || len(rep.Nodes) != 9 {
		t.Fatalf("healthy cluster: status %s, state %s, %d slots, %d shards, %d nodes; findings %+v",
			rep.Status, rep.ClusterState, rep.SlotsCovered, len(rep.Shards), len(rep.Nodes), rep.Findings)
	}
	for _, n := range rep.Nodes {
		if !n.Reachable || n.Role == "replica" && (n.LinkUp == nil || !*n.LinkUp) {
			t.Errorf("node %s: reachable %v, link %v", n.Addr, n.Reachable, n.LinkUp)
		}
		if m := n.Memory; m == nil || m.Clients < 1 || m.MaxClients < m.Clients {
			t.Errorf("node %s: memory and connections %+v, want them read (Redis 7 says its maxclients)", n.Addr, m)
		}
		// One machine, one clock: read, and within its round trip of 0.
		if clk := n.Clock; clk == nil || clk.Offset > clk.Uncertainty+time.Millisecond || clk.Offset < -clk.Uncertainty-time.Millisecond {
			t.Errorf("node %s: clock %+v, want it read as this machine's", n.Addr, clk)
		}
	}

	victim := c.Replicas(ctx, 1)[0]
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	rep, err = clustercheck.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != clustercheck.Warning {
		t.Fatalf("with a killed replica: status %s, want warning; findings %+v", rep.Status, rep.Findings)
	}
	named := false
	for _, f := range rep.Findings {
		named = named || f.Severity == clustercheck.Warning && f.Node == victim.Addr
	}
	if !named {
		t.Errorf("no warning names the killed replica %s: %+v", victim.Addr, rep.Findings)
	}
}

func TestCheckFlagsRiskySettings(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.NodeTimeout = 15 * time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A primary that cannot persist (its snapshot failed) refuses writes.
	primary := c.Primary(ctx, 1)
	if err := primary.FailPersistence(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.RestorePersistence(context.Background()) })
	rep, err := clustercheck.Run(ctx, clustercheck.Options{Addrs: c.Addrs()[:1], ReadPolicy: "replica-preferred"})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, f := range rep.Findings {
		codes[f.Code] = true
		if f.Code == "persistence_failing" && f.Node != primary.Addr {
			t.Errorf("persistence_failing names %s, want %s", f.Node, primary.Addr)
		}
	}
	for _, want := range []string{"few_replicas", "node_timeout", "reads_when_down", "read_policy", "persistence_none", "persistence_failing"} {
		if !codes[want] {
			t.Errorf("finding %s missing: %+v", want, rep.Findings)
		}
	}
}

func TestCheckUnreachableSeed(t *testing.T) {
	_, err := clustercheck.Run(context.Background(), clustercheck.Options{Addrs: []string{"127.0.0.1:1"}, Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no seed answered") {
		t.Fatalf("Run with an unreachable seed = %v", err)
	}
}

func TestCheckReportsRefusedCredentialsAndACLDifferences(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.User, cfg.Password = "apollo", "s3cret"
		cfg.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
		cfg.Persistence = localcluster.PersistenceAOF
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := clustercheck.Options{Addrs: c.Addrs()[:1], Username: "apollo", Password: "s3cret", ReadPolicy: "replica-preferred", Rights: redisstore.Rights()}
	access := map[string]bool{"credentials_rejected": true, "auth_not_required": true, "acl_unreadable": true, "acl_users_differ": true, "acl_user_differs": true, "rights_denied": true}

	rep, err := clustercheck.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != clustercheck.Info {
		t.Errorf("clean cluster: status %s, want info; findings %+v", rep.Status, rep.Findings)
	}
	for _, f := range rep.Findings {
		if access[f.Code] {
			t.Errorf("clean cluster: %s %s: %s", f.Code, f.Node, f.Message)
		}
	}
	for _, n := range rep.Nodes {
		if strings.Join(n.ACLUsers, " ") != "apollo default" || !strings.Contains(n.ACLUser, "+@all") {
			t.Errorf("clean cluster: node %s has ACL users %v, rules %q", n.Addr, n.ACLUsers, n.ACLUser)
		}
	}

	// One node with another password for Apollo's user, one with an extra
	// user, one where Apollo's user has other rules, one where it is denied
	// INFO (-@dangerous). None is the seed.
	wrong, extra, rules, narrowed := c.Replicas(ctx, 1)[0], c.Replicas(ctx, 2)[0], c.Replicas(ctx, 0)[0], c.Primary(ctx, 2)
	for n, rule := range map[*localcluster.Node][]any{
		wrong:    {"apollo", "resetpass", ">other"},
		extra:    {"intruder", "on", ">x", "+@all", "~*"},
		rules:    {"apollo", "-flushall"},
		narrowed: {"apollo", "-@dangerous"},
	} {
		cl := n.Client()
		err := cl.Do(ctx, append([]any{"ACL", "SETUSER"}, rule...)...).Err()
		cl.Close()
		if err != nil {
			t.Fatalf("ACL SETUSER on %s: %v", n.Addr, err)
		}
	}
	rep, err = clustercheck.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	clustercheck.WriteText(&text, rep)
	t.Logf("apollo check on the faulty cluster:\n%s", text.String())
	if rep.Status != clustercheck.Critical {
		t.Errorf("faulty cluster: status %s, want critical", rep.Status)
	}
	want := []struct {
		sev        clustercheck.Severity
		code, node string
		says       string
	}{
		{clustercheck.Critical, "credentials_rejected", wrong.Addr, "WRONGPASS"},
		{clustercheck.Warning, "acl_users_differ", extra.Addr, "extra: intruder"},
		{clustercheck.Warning, "acl_user_differs", rules.Addr, "-flushall"},
		{clustercheck.Critical, "rights_denied", narrowed.Addr, "may not run info on this primary"},
	}
	for _, w := range want {
		found := false
		for _, f := range rep.Findings {
			found = found || f.Severity == w.sev && f.Code == w.code && f.Node == w.node && strings.Contains(f.Message, w.says)
		}
		if !found {
			t.Errorf("no %s %s finding on %s saying %q: %+v", w.sev, w.code, w.node, w.says, rep.Findings)
		}
		line := fmt.Sprintf("[%s] %s %s: ", strings.ToUpper(w.sev.String()), w.code, w.node)
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report has no line starting %q", line)
		}
	}
	for _, f := range rep.Findings {
		if f.Node == wrong.Addr && f.Code != "credentials_rejected" {
			t.Errorf("the node refusing the credentials is also reported as %s: %s", f.Code, f.Message)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"severity":"critical","code":"credentials_rejected","node":"`+wrong.Addr+`"`) {
		t.Errorf("--json report does not carry the critical credentials finding on %s: %s", wrong.Addr, b)
	}
}

func TestCheckReportsANodeWithAnotherOrNoPassword(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.Primaries, cfg.Replicas = 3, 1
		cfg.Password = "s3cret"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong, open := c.Replicas(ctx, 1)[0], c.Replicas(ctx, 2)[0]
	for n, pass := range map[*localcluster.Node]string{wrong: "other", open: ""} {
		cl := n.Client()
		err := cl.ConfigSet(ctx, "requirepass", pass).Err()
		cl.Close()
		if err != nil {
			t.Fatalf("CONFIG SET requirepass on %s: %v", n.Addr, err)
		}
	}
	rep, err := clustercheck.Run(ctx, clustercheck.Options{Addrs: c.Addrs()[:1], Password: "s3cret", ReadPolicy: "primary"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.User != "default" {
		t.Errorf("report user = %q, want default", rep.User)
	}
	got := map[string]clustercheck.Finding{}
	for _, f := range rep.Findings {
		if f.Node == wrong.Addr || f.Node == open.Addr {
			got[f.Code+" "+f.Node] = f
		}
	}
	if f, ok := got["credentials_rejected "+wrong.Addr]; !ok || f.Severity != clustercheck.Critical || !strings.Contains(f.Message, "WRONGPASS") {
		t.Errorf("node %s with another password: findings %+v", wrong.Addr, got)
	}
	// Without a password, the node still accepts Apollo's HELLO AUTH: a warning, not a refusal.
	if f, ok := got["auth_not_required "+open.Addr]; !ok || f.Severity != clustercheck.Warning {
		t.Errorf("node %s without a password: findings %+v", open.Addr, got)
	}
	if _, ok := got["credentials_rejected "+open.Addr]; ok {
		t.Errorf("node %s without a password is reported as refusing the credentials: %+v", open.Addr, got)
	}
	if rep.Status != clustercheck.Critical {
		t.Errorf("status %s, want critical", rep.Status)
	}
}

// A migration left open is found on both of its nodes, from whichever
// seed, and no longer once it is finished.
func TestCheckFindsASlotMigrationLeftOpen(t *testing.T) {
	c := clustertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from, to := c.Primary(ctx, 0), c.Primary(ctx, 1)
	slot, finish, err := c.OpenMigration(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	opts := clustercheck.Options{Addrs: c.Addrs()[:1]}
	open := func() []string {
		t.Helper()
		rep, err := clustercheck.Run(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range rep.Findings {
			if f.Code == "slot_migration_open" {
				out = append(out, f.Node+" "+f.Message)
			}
		}
		return out
	}
	got := open()
	want := []string{fmt.Sprintf("%s slot %d is migrating to %s", from.Addr, slot, to.Addr), fmt.Sprintf("%s slot %d is importing from %s", to.Addr, slot, from.Addr)}
	if len(got) != 2 || !strings.HasPrefix(got[0], want[0]) && !strings.HasPrefix(got[1], want[0]) || !strings.HasPrefix(got[0], want[1]) && !strings.HasPrefix(got[1], want[1]) {
		t.Fatalf("open slot findings:\n%s\nwant them to begin:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := finish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := open(); len(got) != 0 {
		t.Errorf("after the move was finished: %v", got)
	}
}

// As a user with exactly Apollo's rights (redisstore.ACLRules: no INFO of
// the ACL, no CONFIG), apollo check finds nothing to warn of on a healthy
// cluster: what it may not read is said, not warned of.
func TestCheckAsAUserWithExactlyApollosRightsWarnsOfNothing(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) {
		cfg.User, cfg.Password = "admin", "s3cret" // no client without a password
		cfg.Persistence = localcluster.PersistenceAOF
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.SetUser(ctx, "apollo", append([]string{"on", ">pw"}, redisstore.ACLRules()...)...); err != nil {
		t.Fatal(err)
	}
	rep, err := clustercheck.Run(ctx, clustercheck.Options{Addrs: c.Addrs()[:1], Username: "apollo", Password: "pw",
		ReadPolicy: "replica-preferred", Rights: redisstore.Rights()})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	clustercheck.WriteText(&text, rep)
	if rep.Status != clustercheck.Info {
		t.Errorf("status %s, want info:\n%s", rep.Status, text.String())
	}
	t.Logf("apollo check as a user with exactly Apollo's rights:\n%s", text.String())
}

// Over TLS, apollo check reads the certificate each node presents: the
// throwaway cluster's expire in a day, so every node is warned of, with
// the time it expires.
func TestCheckOverTLSWarnsOfNodeCertificatesAboutToExpire(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas, cfg.TLS = 3, 1, true })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := clustercheck.Run(ctx, clustercheck.Options{Addrs: c.Addrs()[:1], TLS: c.TLSConfig(), ReadPolicy: "replica-preferred"})
	if err != nil {
		t.Fatal(err)
	}
	warned := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Code == "node_cert_expiring" {
			warned[f.Node] = true
		}
	}
	for _, n := range rep.Nodes {
		if n.CertExpiry == nil || n.CertExpiry.Before(time.Now()) || n.CertExpiry.After(time.Now().Add(25*time.Hour)) {
			t.Errorf("%s: certificate expiry %v, want the day ahead the cluster's certificates have", n.Addr, n.CertExpiry)
		}
		if !warned[n.Addr] {
			t.Errorf("%s: no node_cert_expiring finding", n.Addr)
		}
	}
}
