package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

var consoleScreenshot = flag.String("console-screenshot", "", "write a screenshot of the console under a replica hang to this PNG file")

// chromium is Debian's Chromium (make chromium installs it).
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("APOLLO_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	t.Fatal("the console's browser test needs Chromium: run `make chromium` (apt-get install chromium) or set APOLLO_CHROMIUM")
	return ""
}

// browser starts a headless Chromium of its own (a fresh profile, no
// network beyond this machine's loopback) and records every console
// error, uncaught exception and failed load of the pages it shows.
func browser(t *testing.T, path string) (ctx context.Context, problems func() []string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1800),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	var mu sync.Mutex
	var seen []string
	err := chromedp.Listen(ctx, func(ev any) {
		var p string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + ev.ExceptionDetails.Text
			if e := ev.ExceptionDetails.Exception; e != nil {
				p += " " + e.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				p = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				p = "log " + string(ev.Entry.Level) + ": " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if p != "" {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// The console, in a real browser, against apollo dev with two instances:
// it loads cleanly, its figures are /metrics', a replica killed from its
// fault panel shows as ejected within 2 s, and a rainstorm's tripped cell
// appears on its map.
func TestTheConsoleShowsTheClusterLiveInABrowser(t *testing.T) {
	path := chromium(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	state := filepath.Join(tmp, "dev.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Read while dev runs and writes: syncBuffer, not bytes.Buffer.
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"dev", "--drivers", "400", "--instances", "2", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--state-file", state, "--log-level", "error"}, &out, &errb)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("dev did not stop within 60 s")
		}
		if left := clustertest.RedisProcessesUnder(tmp); len(left) > 0 {
			t.Errorf("redis-server processes left after dev stopped: %v", left)
		}
	}()
	waitForFile(t, state, 120*time.Second, done, &errb)
	var st devState
	b, _ := os.ReadFile(state)
	if err := json.Unmarshal(b, &st); err != nil || st.ConsoleURL == "" {
		t.Fatalf("state file %s: %v", b, err)
	}
	// The banner follows the state file.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), st.ConsoleURL) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), st.ConsoleURL) {
		t.Errorf("dev's banner does not show the console's URL %s:\n%s", st.ConsoleURL, out.String())
	}
	tok, err := os.ReadFile(st.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	if strings.Contains(out.String(), token) {
		t.Error("dev printed the admin token")
	}

	bctx, problems := browser(t, path)
	page := func(js string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return v
	}
	waitPage := func(d time.Duration, what, js string) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			if ok, _ := page(js).(bool); ok {
				return time.Since(start)
			}
			if time.Since(start) > d {
				t.Fatalf("the console does not show %s after %s", what, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	lctx, lcancel := context.WithTimeout(bctx, 30*time.Second)
	defer lcancel()
	if err := chromedp.Do(lctx, chromedp.Navigate(st.ConsoleURL+"#token="+token), chromedp.WaitVisible(chromedp.CSS(`tr[data-node]`))); err != nil {
		t.Fatalf("loading the console: %v", err)
	}
	if href, _ := page(`location.href`).(string); strings.Contains(href, token) {
		t.Errorf("the token stays in the address bar: %s", href)
	}
	if nodes, _ := page(`document.querySelectorAll('tr[data-node]').length`).(float64); int(nodes) != len(st.Nodes) {
		t.Errorf("the console shows %g nodes, the cluster has %d", nodes, len(st.Nodes))
	}

	// Its figures are /metrics'.
	for i := range 3 {
		createBooking(t, st.APIURL, fmt.Sprintf("console-%d", i))
	}
	waitPage(10*time.Second, "3 bookings created", `document.querySelector('[data-key="pipeline.totals.created"]').textContent === "3"`)
	if got := metric(t, st.AdminURL, `apollo_bookings_total{outcome="created"}`); got != 3 {
		t.Errorf("/metrics counts %g bookings created, the console 3", got)
	}
	rulesVersion, _ := page(`document.querySelector('#rules-version').textContent`).(string)
	if want := rulesVersionOf(t, st.AdminURL); rulesVersion != want {
		t.Errorf("the console shows rules version %s, GET /v1/spampede/rules %s", rulesVersion, want)
	}
	waitPage(10*time.Second, "both instances' rules version", `document.querySelectorAll('[data-instance-rules]').length === 2 &&
		[...document.querySelectorAll('[data-instance-rules]')].every(e => e.textContent === "`+rulesVersion+`")`)
	// Each instance announces its /readyz verdict: both are ready.
	waitPage(10*time.Second, "both instances ready", `document.querySelectorAll('[data-instance-ready]').length === 2 &&
		[...document.querySelectorAll('[data-instance-ready]')].every(e => e.textContent === "ready")`)

	// A replica killed from the fault panel shows as ejected within 2 s:
	// dev's rider reads find it dead.
	victim, hung := replicaAddrs(t, st)
	page(`document.querySelector('button[data-action="kill"][data-node="` + victim + `"]').click(), true`)
	took := waitPage(10*time.Second, victim+" ejected", `(document.querySelector('tr[data-node="`+victim+`"]')||{}).dataset?.state === "ejected"`)
	t.Logf("a killed replica showed as ejected %s after the click", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("a killed replica took %s to show as ejected, want within 2 s", took)
	}
	if got := metric(t, st.AdminURL, `apollo_redis_node_ejected{node="`+victim+`"}`); got != 1 {
		t.Errorf("the console shows %s ejected, /metrics apollo_redis_node_ejected = %g", victim, got)
	}
	page(`document.querySelector('button[data-action="resume"][data-node="` + victim + `"]').click(), true`)
	waitPage(40*time.Second, victim+" healthy again", `(document.querySelector('tr[data-node="`+victim+`"]')||{}).dataset?.state === "healthy"`)

	// A rainstorm trips a cell, and the cell appears on the map.
	page(`document.querySelector('#rain-toggle').click(), true`)
	waitPage(60*time.Second, "a tripped cell on the map", `document.querySelectorAll('#chart-map svg g[data-cell]').length > 0`)
	cell, _ := page(`document.querySelector('#chart-map svg g[data-cell]').dataset.cell`).(string)
	if cells := get(t, st.AdminURL+"/v1/spampede/cells?top=1000"); !strings.Contains(cells, cell) {
		t.Errorf("the map shows cell %s tripped; /v1/spampede/cells does not: %s", cell, cells)
	}

	// Under a replica hang, for the README's picture.
	if *consoleScreenshot != "" {
		time.Sleep(15 * time.Second) // the charts show some history
	}
	page(`document.querySelector('button[data-action="hang"][data-node="` + hung + `"]').click(), true`)
	waitPage(10*time.Second, hung+" out of routing", `["stalled","ejected"].includes((document.querySelector('tr[data-node="`+hung+`"]')||{}).dataset?.state)`)
	if *consoleScreenshot != "" {
		time.Sleep(2500 * time.Millisecond) // a chart round, and well within the cluster's node timeout
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*consoleScreenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page(`document.querySelector('button[data-action="resume"][data-node="` + hung + `"]').click(), true`)
	page(`document.querySelector('#rain-toggle').click(), true`)
	waitPage(10*time.Second, "the rainstorm stopped", `document.querySelector('#rain-toggle').textContent === "start a rainstorm"`)
	errText, _ := page(`document.querySelector('#fault-error').hidden ? "" : document.querySelector('#fault-error').textContent`).(string)
	if errText != "" {
		t.Errorf("the fault panel reported: %s", errText)
	}
	// Through the kill, the hang and the rain, every call succeeded: the
	// page's count of API calls answered 5xx is /metrics', and 0 on every
	// instance; the rider app's reads and the rainstorm's bookings all
	// got their answer (a 429 from Spampede is an answer).
	waitPage(5*time.Second, "the traffic figures", `document.querySelector('[data-key="traffic.totals.calls_2xx"]').textContent !== "0"`)
	fivexx, _ := page(`document.querySelector('[data-key="traffic.totals.calls_5xx"]').textContent`).(string)
	if want := fmt.Sprint(sumMetric(t, st.AdminURL, `apollo_http_requests_total{code="5`)); fivexx != want || fivexx != "0" {
		t.Errorf("the console counts %s API calls answered 5xx, /metrics %s; want 0", fivexx, want)
	}
	for _, admin := range st.AdminURLs[1:] {
		if n := sumMetric(t, admin, `apollo_http_requests_total{code="5`); n != 0 {
			t.Errorf("%s answered %g API calls 5xx", admin, n)
		}
	}
	var fs struct {
		Faults struct {
			Reads     struct{ Sent, OK, Failed int64 } `json:"reads"`
			Rainstorm struct{ Sent, Failed int64 }     `json:"rainstorm"`
		} `json:"faults"`
	}
	if err := json.Unmarshal([]byte(get(t, st.AdminURL+"/console/api/state")), &fs); err != nil {
		t.Fatal(err)
	}
	t.Logf("rider reads: %+v; rainstorm: %+v", fs.Faults.Reads, fs.Faults.Rainstorm)
	if r := fs.Faults.Reads; r.Sent == 0 || r.Failed != 0 {
		t.Errorf("the rider app's reads: %d sent, %d failed; want some, none failed", r.Sent, r.Failed)
	}
	if r := fs.Faults.Rainstorm; r.Sent == 0 || r.Failed != 0 {
		t.Errorf("the rainstorm's bookings: %d sent, %d failed; want some, none failed", r.Sent, r.Failed)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the browser reported problems:\n%s", strings.Join(p, "\n"))
	}
}

// replicaAddrs are two replicas of different shards.
func replicaAddrs(t *testing.T, st devState) (a, b string) {
	for _, n := range st.Nodes {
		if n.Role != "replica" {
			continue
		}
		switch {
		case a == "":
			a = n.Addr
		case b == "" && n.Shard != shardOfAddr(st, a):
			b = n.Addr
		}
	}
	if a == "" || b == "" {
		t.Fatalf("no two replicas of different shards in %+v", st.Nodes)
	}
	return a, b
}

func shardOfAddr(st devState, addr string) int {
	for _, n := range st.Nodes {
		if n.Addr == addr {
			return n.Shard
		}
	}
	return -1
}

func createBooking(t *testing.T, api, key string) {
	t.Helper()
	body := `{"rider_id":"rider-` + key + `","service":"car","pickup":{"lat":1.3521,"lng":103.8198},"dropoff":{"lat":1.29,"lng":103.85}}`
	req, _ := http.NewRequest(http.MethodPost, api+"/v1/bookings", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/bookings = %d: %s", resp.StatusCode, b)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metric is one series' value in /metrics, by its exact text.
func metric(t *testing.T, admin, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(get(t, admin+"/metrics"))
	if m == nil {
		t.Fatalf("/metrics has no %s", series)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sumMetric sums the values of the series whose text starts with prefix.
func sumMetric(t *testing.T, admin, prefix string) float64 {
	t.Helper()
	sum := 0.0
	for _, line := range strings.Split(get(t, admin+"/metrics"), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

func rulesVersionOf(t *testing.T, admin string) string {
	t.Helper()
	var rs struct {
		Version int64 `json:"version"`
	}
	if err := json.Unmarshal([]byte(get(t, admin+"/v1/spampede/rules")), &rs); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(rs.Version, 10)
}
