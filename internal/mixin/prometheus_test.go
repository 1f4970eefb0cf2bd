package mixin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/cli"
	"github.com/apollo-platform/apollo/internal/mixin"
)

// A real Prometheus scrapes `apollo dev` (two instances) with the mixin's
// rules loaded: every metric a rule reads exists, and every rule evaluates
// without error.
func TestPrometheusScrapesApolloDevAndEvaluatesEveryRule(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: install Debian's prometheus package (apt-get install prometheus)")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	apis, admins := startDev(t, tmp)
	for _, api := range apis { // traffic, as any serving instance has
		resp, err := http.Get(api + "/v1/drivers/drv-000001")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	rules, _ := filepath.Glob(filepath.Join(monitoringDir, "rules", "*.yaml"))
	var abs []string
	for _, r := range rules {
		a, _ := filepath.Abs(r)
		abs = append(abs, a)
	}
	var targets []string
	for _, a := range admins {
		targets = append(targets, strings.TrimPrefix(a, "http://"))
	}
	cfg, _ := json.Marshal(map[string]any{ // JSON is YAML
		"global":         map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files":     abs,
		"scrape_configs": []any{map[string]any{"job_name": "apollo", "static_configs": []any{map[string]any{"targets": targets}}}},
	})
	cfgPath := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	// Its log goes to a file, read while it runs (a buffer would race).
	logPath := filepath.Join(tmp, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(tmp, "tsdb"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	prom := "http://" + addr

	// Both targets up, and every rule evaluated at least twice.
	eventually(t, 60*time.Second, "both targets up", func() (bool, string) {
		var res struct {
			ActiveTargets []struct{ Health, ScrapeURL, LastError string } `json:"activeTargets"`
		}
		if err := query(prom+"/api/v1/targets", &res); err != nil {
			return false, err.Error()
		}
		up := 0
		for _, tg := range res.ActiveTargets {
			if tg.Health == "up" {
				up++
			}
		}
		return up == len(admins), fmt.Sprintf("%+v; prometheus: %s", res.ActiveTargets, logs())
	})
	time.Sleep(3 * time.Second)

	var groups struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Name, Query, Health, LastError, Type string
				LastEvaluation                       time.Time
			}
		}
	}
	if err := query(prom+"/api/v1/rules", &groups); err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`\bapollo_[a-z0-9_]+`)
	var names []string
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.IsZero() {
				t.Errorf("rule %s (%s): health %q, error %q, evaluated %s", r.Name, g.Name, r.Health, r.LastError, r.LastEvaluation)
			}
			for _, m := range metric.FindAllString(r.Query, -1) {
				names = append(names, m) // a histogram's as the rule reads it: its _bucket series
			}
		}
	}
	if want := countRules(t, rules); n != want {
		t.Errorf("Prometheus loaded %d rules, the files hold %d", n, want)
	}
	slices.Sort(names)
	for _, series := range slices.Compact(names) {
		var res []map[string]string
		if err := query(prom+"/api/v1/series?match[]="+url.QueryEscape(series), &res); err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 {
			t.Errorf("no series %s: a rule reads a metric Apollo does not export", series)
		}
	}
	// A healthy run raises no alarm: no warning or critical alert pending
	// or firing (a rule that fires on a healthy fleet would page for nothing).
	var alerts struct {
		Alerts []struct {
			Labels map[string]string
			State  string
		}
	}
	if err := query(prom+"/api/v1/alerts", &alerts); err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts.Alerts {
		if a.Labels["severity"] != "info" {
			t.Errorf("alert %s is %s on a healthy apollo dev: %v", a.Labels["alertname"], a.State, a.Labels)
		}
	}
	// Every dashboard query runs, and finds series.
	for _, q := range mixin.Queries() {
		expr := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `1m`).Replace(q.Expr)
		var res struct {
			Result []json.RawMessage `json:"result"`
		}
		if err := query(prom+"/api/v1/query?query="+url.QueryEscape(expr), &res); err != nil {
			t.Errorf("dashboard query %s: %v", expr, err)
		} else if len(res.Result) == 0 && !strings.Contains(expr, "histogram_quantile") && !strings.Contains(expr, "hedges") && !strings.Contains(expr, "retries") {
			// Quantiles of empty histograms and counters of events that
			// never happened in a quiet dev run may be empty; the rest not.
			t.Errorf("dashboard query %s found nothing", expr)
		}
	}
	t.Logf("%d rules evaluated, %d metrics they read all present on %d instances; %d dashboard queries run", n, len(slices.Compact(names)), len(admins), len(mixin.Queries()))
}

// startDev runs `apollo dev` with two instances until the test ends and
// returns their API and admin URLs.
func startDev(t *testing.T, tmp string) (apis, admins []string) {
	t.Helper()
	state := filepath.Join(tmp, "dev.json")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"dev", "--drivers", "200", "--instances", "2", "--listen", "127.0.0.1:0",
			"--admin-listen", "127.0.0.1:0", "--state-file", state, "--log-level", "warn"}, io.Discard, &errs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("apollo dev did not stop within 60 s")
		}
	})
	var st struct {
		APIURLs   []string `json:"api_urls"`
		AdminURLs []string `json:"admin_urls"`
	}
	eventually(t, 90*time.Second, "apollo dev is up", func() (bool, string) {
		select {
		case code := <-done:
			t.Fatalf("apollo dev exited with %d: %s%s", code, out.String(), errs.String())
		default:
		}
		b, err := os.ReadFile(state)
		return err == nil && json.Unmarshal(b, &st) == nil && len(st.AdminURLs) == 2, "no state file"
	})
	return st.APIURLs, st.AdminURLs
}

// countRules counts the rules in the rule files: the lines that start one.
func countRules(t *testing.T, files []string) int {
	t.Helper()
	start := regexp.MustCompile(`(?m)^\s*- (record|alert):`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(start.FindAll(b, -1))
	}
	return n
}

// query GETs a Prometheus API URL and decodes its data.
func query(u string, data any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", u, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// eventually polls cond until it holds or d passes; cond also says what it saw.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
	}
	t.Fatalf("not within %s: %s; last: %s", d, what, last)
}
