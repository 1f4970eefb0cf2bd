package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	store, r := rulesStore(t, c)
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
	store, _ := rulesStore(t, c)
	stored, ok, err := store.LoadRules(context.Background())
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
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = c.Addrs()[:1]
	cfg.RulesPollEvery = 50 * time.Millisecond
	cfg.AdminToken = testAdminToken
	_, _, admin := serveApp(t, cfg)
	return admin
}

// testAdminToken is the admin token of the instances that change rules.
const testAdminToken = "test-admin-token-0123456789"

// rulesStore reads and writes the shared rules straight in Redis, as
// another instance would.
func rulesStore(t *testing.T, c *localcluster.Cluster) (*redisstore.SpampedeCounters, *redisroute.Router) {
	t.Helper()
	cfg := redisroute.DefaultConfig()
	cfg.Addrs, cfg.CallTimeout = c.Addrs()[:1], 5*time.Second
	r, err := redisroute.New(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return redisstore.NewSpampedeCounters(r), r
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
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
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
