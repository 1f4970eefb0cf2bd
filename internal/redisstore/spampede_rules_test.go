package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// TestTwoInstancesSavingRulesAtOnceConverge: two Apollo instances on one
// cluster each save a different rule set, edited from the same version, at
// the same moment, through their admin APIs. One save wins (200) and the
// other is refused (409); after polling, both instances enforce the same
// rule set, the stored one, one version above the one edited. Polling also
// installs a stored rule set of the version in force but other content.
func TestTwoInstancesSavingRulesAtOnceConverge(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	admins := []string{startInstance(t, c), startInstance(t, c)}
	r := newRouterFor(t, c)
	store := redisstore.NewSpampedeCounters(r)
	for round := range 3 {
		var start spampede.RuleSet
		if err := json.Unmarshal(getRules(t, admins[0]), &start); err != nil {
			t.Fatal(err)
		}
		statuses := make([]int, len(admins))
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i, admin := range admins {
			edit := spampede.RuleSet{Version: start.Version, Rules: []spampede.Rule{{Name: fmt.Sprintf("instance-%d-round-%d", i, round),
				MinLat: 1.15, MaxLat: 1.50, MinLng: 103.55, MaxLng: 104.10, CellBits: 30, BucketSeconds: 60, Threshold: 10 + i, HoldDownSeconds: 60}}}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				statuses[i], _ = putRules(t, admin, edit)
			}()
		}
		close(gate)
		wg.Wait()

		var a, b []byte
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if a, b = getRules(t, admins[0]), getRules(t, admins[1]); bytes.Equal(a, b) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the instances never converged (the saves answered %v):\n A %s B %s", round, statuses, a, b)
			}
		}
		var inForce spampede.RuleSet
		if err := json.Unmarshal(a, &inForce); err != nil {
			t.Fatal(err)
		}
		stored, ok, err := store.LoadRules(context.Background())
		if err != nil || !ok {
			t.Fatalf("LoadRules = %v, %v", ok, err)
		}
		if want, _ := json.Marshal(stored); !bytes.Equal(bytes.TrimSpace(a), want) {
			t.Fatalf("round %d: both instances enforce %s, but the store holds %s", round, a, want)
		}
		if inForce.Version != start.Version+1 {
			t.Errorf("round %d: version %d in force, want %d (edited %d)", round, inForce.Version, start.Version+1, start.Version)
		}
		wins := 0
		for i, s := range statuses {
			switch s {
			case http.StatusOK:
				wins++
				if want := fmt.Sprintf("instance-%d-round-%d", i, round); inForce.Rules[0].Name != want {
					t.Errorf("round %d: %q is in force, but the save answered 200 for %q", round, inForce.Rules[0].Name, want)
				}
			case http.StatusConflict:
			default:
				t.Errorf("round %d: a save answered %d", round, s)
			}
		}
		if wins != 1 {
			t.Errorf("round %d: the saves answered %v, want one 200 and one 409", round, statuses)
		}
	}

	// A failover lost the last save, and another edit was saved under the
	// same version: equal versions, other content. Polling installs it.
	var inForce spampede.RuleSet
	if err := json.Unmarshal(getRules(t, admins[0]), &inForce); err != nil {
		t.Fatal(err)
	}
	inForce.Rules[0].Name = "saved-after-a-failover"
	raw, _ := json.Marshal(inForce)
	if err := r.Exec(context.Background(), []redisroute.Cmd{redisroute.Write("SET", "apollo:spm:rules", string(raw))}).Err(); err != nil {
		t.Fatal(err)
	}
	for i, admin := range admins {
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got := getRules(t, admin)
			if bytes.Equal(bytes.TrimSpace(got), raw) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d keeps %s, the store holds %s", i, got, raw)
			}
		}
	}
}

// TestSpampedeRulesSaveComparesVersions: a rule set of version v replaces
// only version v-1 (or an empty store); a repeat of the save that landed
// succeeds again; a conflict says so with a stable error.
func TestSpampedeRulesSaveComparesVersions(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	store := redisstore.NewSpampedeCounters(newRouterFor(t, c))
	ctx := context.Background()
	doc := func(v int64, name string) []byte {
		b, err := json.Marshal(spampede.RuleSet{Version: v, Rules: []spampede.Rule{{Name: name,
			MinLat: 1, MaxLat: 2, MinLng: 103, MaxLng: 104, CellBits: 30, BucketSeconds: 60, Threshold: 5}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	steps := []struct {
		name     string
		raw      []byte
		conflict bool
		want     string // the rule stored afterwards
		version  int64
	}{
		{name: "any version seeds an empty store", raw: doc(4, "seed"), want: "seed", version: 4},
		{name: "the next version replaces it", raw: doc(5, "a"), want: "a", version: 5},
		{name: "the same save again is a repeat", raw: doc(5, "a"), want: "a", version: 5},
		{name: "another edit of version 4 conflicts", raw: doc(5, "b"), conflict: true, want: "a", version: 5},
		{name: "a version from the past conflicts", raw: doc(3, "old"), conflict: true, want: "a", version: 5},
		{name: "a version skipping ahead conflicts", raw: doc(9, "ahead"), conflict: true, want: "a", version: 5},
		{name: "an edit of version 5 replaces it", raw: doc(6, "b"), want: "b", version: 6},
	}
	for _, st := range steps {
		err := store.SaveRules(ctx, st.raw)
		switch {
		case st.conflict && (!errors.Is(err, redisstore.ErrConflict) || !errors.Is(err, redisstore.ErrRulesConflict)):
			t.Errorf("%s: SaveRules = %v, want ErrRulesConflict, an ErrConflict", st.name, err)
		case !st.conflict && err != nil:
			t.Errorf("%s: SaveRules = %v", st.name, err)
		}
		rs, ok, err := store.LoadRules(ctx)
		if err != nil || !ok || rs.Version != st.version || len(rs.Rules) != 1 || rs.Rules[0].Name != st.want {
			t.Errorf("%s: LoadRules = %+v, %v, %v; want version %d rule %q", st.name, rs, ok, err, st.version, st.want)
		}
	}
	if err := store.SaveRules(ctx, []byte(`{"version":7,"rules":[{"name":""}]}`)); err == nil {
		t.Errorf("SaveRules of an invalid rule set = nil, want an error")
	}
	// A seed never replaces a stored rule set, whatever its version.
	if rs, err := store.SeedRules(ctx, doc(7, "seed")); err != nil || rs.Version != 6 || rs.Rules[0].Name != "b" {
		t.Errorf("SeedRules over version 6 = %+v, %v; want the stored version 6", rs, err)
	}
}

// TestRulesOnAClusterWithoutReplicas: with no replica to confirm a save,
// an instance still starts (the seed is stored unconfirmed), and a PUT is
// not reported done (503, with a message about storage, not bookings),
// though the rules are stored and in force; a repeat is safe.
func TestRulesOnAClusterWithoutReplicas(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 0 })
	admin := startInstance(t, c)
	var start spampede.RuleSet
	if err := json.Unmarshal(getRules(t, admin), &start); err != nil {
		t.Fatal(err)
	}
	if start.Version != spampede.DefaultRuleSet().Version {
		t.Fatalf("seeded version %d, want the default's %d", start.Version, spampede.DefaultRuleSet().Version)
	}
	edit := spampede.DefaultRuleSet()
	edit.Rules[0].Threshold = 7
	for range 2 {
		if code, msg := putRules(t, admin, edit); code != http.StatusServiceUnavailable || strings.Contains(msg, "booking") {
			t.Errorf("PUT without a replica = %d %s, want 503 about storage", code, msg)
		}
	}
	stored, ok, err := redisstore.NewSpampedeCounters(newRouterFor(t, c)).LoadRules(context.Background())
	if err != nil || !ok || stored.Version != edit.Version+1 || stored.Rules[0].Threshold != 7 {
		t.Errorf("stored %+v, %v, %v; want version %d with threshold 7", stored, ok, err, edit.Version+1)
	}
	var inForce spampede.RuleSet
	if err := json.Unmarshal(getRules(t, admin), &inForce); err != nil || inForce.Version != edit.Version+1 {
		t.Errorf("in force %+v, %v", inForce, err)
	}
}

// startInstance runs an Apollo instance against c until the test ends and
// returns its admin URL. It polls the shared rules every 50 ms.
func startInstance(t *testing.T, c *localcluster.Cluster) string {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = c.Addrs()[:1]
	cfg.Listen, cfg.AdminListen, cfg.DrainDelay = "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.RulesPollEvery = 50 * time.Millisecond
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + a.AdminAddr()
}

func getRules(t *testing.T, admin string) []byte {
	t.Helper()
	resp, err := http.Get(admin + "/v1/spampede/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET rules = %d %s, %v", resp.StatusCode, b, err)
	}
	return b
}

// putRules is safe to call from any goroutine: it reports, never fails t.
func putRules(t *testing.T, admin string, rs spampede.RuleSet) (int, string) {
	body, _ := json.Marshal(rs)
	req, _ := http.NewRequest(http.MethodPut, admin+"/v1/spampede/rules", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("PUT rules: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	t.Logf("PUT %s version %d: %d %s", rs.Rules[0].Name, rs.Version, resp.StatusCode, bytes.TrimSpace(msg))
	return resp.StatusCode, string(msg)
}
