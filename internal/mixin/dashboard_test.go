package mixin_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/apollo-platform/apollo/internal/mixin"
)

var update = flag.Bool("update", false, "rewrite monitoring/dashboards/apollo.json from mixin.Dashboard")

// The committed dashboard is what mixin.Dashboard builds: edit the Go code,
// then `go test ./internal/mixin -run Dashboard -update`.
func TestDashboardIsTheCommittedJSON(t *testing.T) {
	got, err := mixin.Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(monitoringDir, "dashboards", "apollo.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from mixin.Dashboard(): run go test ./internal/mixin -run Dashboard -update", path)
	}
	var d struct {
		Panels []struct {
			ID      int
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	targets := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeated", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "timeseries" && len(p.Targets) == 0 {
			t.Errorf("panel %d has no query", p.ID)
		}
		targets += len(p.Targets)
	}
	if targets != len(mixin.Queries()) {
		t.Errorf("%d queries in the panels, mixin.Queries has %d", targets, len(mixin.Queries()))
	}
}
