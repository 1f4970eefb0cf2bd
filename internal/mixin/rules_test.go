package mixin_test

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// monitoringDir is the mixin's directory, from this package's.
const monitoringDir = "../../monitoring"

// promtool is Debian's (package prometheus); make test's CI installs it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (apt-get install prometheus)")
	}
	return p
}

func TestRulesAreValidAndPassTheirUnitTests(t *testing.T) {
	bin := promtool(t)
	rules, err := filepath.Glob(filepath.Join(monitoringDir, "rules", "*.yaml"))
	if err != nil || len(rules) < 2 {
		t.Fatalf("rule files: %v, %v", rules, err)
	}
	if out, err := exec.Command(bin, append([]string{"check", "rules"}, rules...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	tests, _ := filepath.Glob(filepath.Join(monitoringDir, "tests", "*.yaml"))
	if len(tests) == 0 {
		t.Fatal("no rule tests")
	}
	cmd := exec.Command(bin, append([]string{"test", "rules"}, tests...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
