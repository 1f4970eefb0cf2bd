package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

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
