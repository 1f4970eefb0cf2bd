package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/console"
	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/geocell"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeRouter struct{ st redisroute.Status }

func (f fakeRouter) Status() redisroute.Status { return f.st }

type fakeFleet struct {
	mu        sync.Mutex
	view      []redisstore.PartitionView
	members   []string
	announced map[string][]byte
}

func (f *fakeFleet) View(context.Context) ([]redisstore.PartitionView, error) { return f.view, nil }
func (f *fakeFleet) Members(context.Context, time.Time) ([]string, error)     { return f.members, nil }
func (f *fakeFleet) Announce(_ context.Context, id string, about []byte, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.announced[id] = about
	return nil
}
func (f *fakeFleet) Announcements(_ context.Context, ids []string) (map[string][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]byte{}
	for _, id := range ids {
		if a, ok := f.announced[id]; ok {
			out[id] = a
		}
	}
	return out, nil
}

// fakeReaches is the instances reporting their reach.
type fakeReaches []string

func (f fakeReaches) Reaches(context.Context, time.Time) ([]fleet.ReachReport, error) {
	var out []fleet.ReachReport
	for _, id := range f {
		out = append(out, fleet.ReachReport{ID: id})
	}
	return out, nil
}

type fakeSpampede struct {
	rules spampede.RuleSet
	cells []spampede.CellState
}

func (f fakeSpampede) Rules() spampede.RuleSet                          { return f.rules }
func (f fakeSpampede) TrippedCells(time.Time, int) []spampede.CellState { return f.cells }

type fakeFaults struct {
	mu   sync.Mutex
	done []string
}

func (f *fakeFaults) View() console.FaultsView {
	return console.FaultsView{Nodes: []console.FaultNode{{Addr: "127.0.0.1:7001"}}}
}
func (f *fakeFaults) Node(_ context.Context, action, addr string) error {
	if addr != "127.0.0.1:7001" {
		return fmt.Errorf("%w: %s", console.ErrUnknownNode, addr)
	}
	if action != console.NodeKill && action != console.NodeHang && action != console.NodeResume {
		return fmt.Errorf("%w %q", console.ErrUnknownAction, action)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = append(f.done, action+" "+addr)
	return nil
}
func (f *fakeFaults) Rainstorm(_ context.Context, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = append(f.done, fmt.Sprint("rain ", on))
	return nil
}

type rig struct {
	srv     *httptest.Server
	reg     *prometheus.Registry
	created prometheus.Counter
	latency prometheus.Observer
	sampler *console.Sampler
	fleet   *fakeFleet
	faults  *fakeFaults
	now     time.Time
}

func newRig(t *testing.T, withFaults bool) *rig {
	t.Helper()
	r := &rig{reg: prometheus.NewRegistry(), now: time.Unix(1_800_000_000, 0)}
	bookings := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_bookings_total"}, []string{"outcome"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apollo_redis_node_latency_seconds", Buckets: []float64{0.001, 0.01}}, []string{"node"})
	r.reg.MustRegister(bookings, lat)
	r.created = bookings.WithLabelValues("created")
	r.latency = lat.WithLabelValues("127.0.0.1:7001")
	clock := func() time.Time { return r.now }
	r.sampler = console.NewSampler(r.reg, time.Second, 10, clock, nil)
	r.fleet = &fakeFleet{announced: map[string][]byte{"b": []byte(`{"rules_version":3,"ready":false,"not_ready":"instance c reaches the primaries of every slot this instance reaches (10923) and more (16384): this instance's path to a primary is cut"}`)}, members: []string{"a", "c"}, // b stands aside: it reports its reach (fakeReaches)
		view: []redisstore.PartitionView{{Partition: 0, Owner: "a", Open: 2, NextDue: r.now.Add(-10 * time.Second),
			Created: []time.Time{r.now.Add(-2 * time.Second), r.now.Add(-40 * time.Second)}}, {Partition: 1}}}
	cell, err := geocell.Of(1.3, 103.8, 30)
	if err != nil {
		t.Fatal(err)
	}
	sp := fakeSpampede{rules: spampede.DefaultRuleSet(), cells: []spampede.CellState{{Key: "car:" + cell.String(), Rule: "singapore", Count: 25, Until: r.now.Add(time.Minute), Service: "car", Cell: cell}}}
	d := console.Deps{Instance: "a", Router: fakeRouter{redisroute.Status{Policy: "replica-preferred", SlotMapAt: r.now.Add(-3 * time.Second),
		Nodes: []redisroute.NodeStatus{{Addr: "127.0.0.1:7001", Role: "primary", Shard: 0, Healthy: true, State: redisroute.StateHealthy, LagSeconds: -1},
			{Addr: "127.0.0.1:7002", Role: "replica", Shard: 0, State: redisroute.StateEjected, EjectReason: "refused", LagSeconds: -1}}}},
		Fleet: r.fleet, Spampede: sp, Sampler: r.sampler, Now: clock, Reaches: fakeReaches{"a", "b", "c"}}
	if withFaults {
		r.faults = &fakeFaults{}
		d.Faults = r.faults
	}
	c, err := console.New(d)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(c.Handler())
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rig) get(t *testing.T, path string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(r.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (r *rig) post(t *testing.T, path, ctype, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(r.srv.URL+path, ctype, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestThePageAndItsFilesAreServedLockedToThisListener(t *testing.T) {
	r := newRig(t, false)
	for _, tc := range []struct {
		path, ctype string
		status      int
	}{
		{"/console/", "text/html", 200},
		{"/console/static/console.js", "javascript", 200},
		{"/console/static/console.css", "text/css", 200},
		{"/console/static/nope.js", "application/json", 404},
		{"/console/static/..%2fdoc.go", "application/json", 404},
		{"/console/elsewhere", "application/json", 404},
	} {
		status, h, _ := r.get(t, tc.path)
		if status != tc.status || !strings.Contains(h.Get("Content-Type"), tc.ctype) {
			t.Errorf("GET %s = %d %s, want %d %s", tc.path, status, h.Get("Content-Type"), tc.status, tc.ctype)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q, want default-src 'self'", tc.path, csp)
		}
	}
}

func TestTheStateIsTheRegistrysAndTheRoutersView(t *testing.T) {
	r := newRig(t, false)
	r.sampler.Sample()
	r.created.Add(4)
	r.latency.Observe(0.0005)
	r.now = r.now.Add(2 * time.Second)
	r.sampler.Sample()
	status, _, body := r.get(t, "/console/api/state")
	if status != 200 {
		t.Fatalf("state = %d: %s", status, body)
	}
	var st console.State
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Pipeline.Totals["created"]; got != 4 {
		t.Errorf("created total = %g, want 4 (the registry's)", got)
	}
	if got := st.Pipeline.PerSecond["created"]; got != 2 {
		t.Errorf("created per second = %g, want 2 (4 over 2 s)", got)
	}
	if len(st.Cluster.Shards) != 1 || len(st.Cluster.Shards[0].Nodes) != 2 {
		t.Fatalf("shards = %+v", st.Cluster.Shards)
	}
	primary, replica := st.Cluster.Shards[0].Nodes[0], st.Cluster.Shards[0].Nodes[1]
	if primary.P50Ms == nil || *primary.P50Ms <= 0 || *primary.P50Ms > 1 {
		t.Errorf("primary p50 = %v ms, want within (0, 1] (one 0.5 ms observation in the first bucket)", primary.P50Ms)
	}
	if replica.State != redisroute.StateEjected || replica.EjectReason != "refused" || replica.P50Ms != nil {
		t.Errorf("replica = %+v, want ejected (refused) with no latency", replica)
	}
	if st.Cluster.SlotMapAgeSeconds != 5 {
		t.Errorf("slot map age = %g s, want 5", st.Cluster.SlotMapAgeSeconds)
	}
	p := st.Pipeline
	if p.Open != 2 || p.Unowned != 1 || len(p.Owners) != 1 || p.Owners[0].Instance != "a" || p.Partitions[0].OverdueSeconds != 12 {
		t.Errorf("pipeline = %+v, want 2 open, 1 unowned, owner a, 12 s overdue", p)
	}
	if p.AgesRead != 2 || fmt.Sprint(p.Ages) != "[{5 1} {15 0} {30 0} {0 1}]" || p.Partitions[0].OldestSeconds != 42 {
		t.Errorf("ages = %v (%d read), oldest %g s; want one under 5 s and one over 30 s, oldest 42 s", p.Ages, p.AgesRead, p.Partitions[0].OldestSeconds)
	}
	// This one's readiness is what it last announced: nothing yet (no Run).
	fl := st.Fleet
	if len(fl) != 3 || fl[0] != (console.Member{Instance: "a", RulesVersion: 1, Self: true, Known: true}) ||
		fl[1].Instance != "b" || fl[1].RulesVersion != 3 || !fl[1].Known || fl[1].Ready == nil || *fl[1].Ready || fl[1].NotReady != "instance c reaches the primaries of every slot this instance reaches (10923) and more (16384): this instance's path to a primary is cut" ||
		fl[2] != (console.Member{Instance: "c"}) {
		t.Errorf("fleet = %s; want a (this one, rules 1), b (rules 3, not ready, behind: standing aside, no member, listed from its reach report) and c (announced nothing)", mustJSON(t, fl))
	}
	if len(st.Spampede.Tripped) != 1 || len(st.Spampede.Tripped[0].Polygon) != 4 || st.Faults != nil {
		t.Errorf("tripped = %+v, faults %+v; want one cell with 4 corners and no fault panel", st.Spampede.Tripped, st.Faults)
	}
}

func TestChartsAreSVGAndTheMapShowsTheTrippedCells(t *testing.T) {
	r := newRig(t, false)
	r.sampler.Sample()
	for _, name := range []string{"traffic", "bookings", "spampede", "map"} {
		status, h, body := r.get(t, "/console/charts/"+name+".svg")
		if status != 200 || h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(body, "<svg") || !strings.HasSuffix(body, "</svg>") {
			t.Errorf("chart %s = %d %s: %.80s", name, status, h.Get("Content-Type"), body)
		}
	}
	if _, _, body := r.get(t, "/console/charts/map.svg"); !strings.Contains(body, `data-cell="30:`) {
		t.Errorf("the map has no tripped cell: %.300s", body)
	}
	if status, _, _ := r.get(t, "/console/charts/nope.svg"); status != 404 {
		t.Errorf("an unknown chart = %d, want 404", status)
	}
}

func TestTheFaultPanelValidatesItsInput(t *testing.T) {
	none := newRig(t, false)
	if status, body := none.post(t, "/console/api/faults/node", "application/json", `{"action":"kill","node":"127.0.0.1:7001"}`); status != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("a fault without a fault panel = %d %s, want 404 not_found", status, body)
	}
	r := newRig(t, true)
	for _, tc := range []struct {
		path, ctype, body string
		status            int
		code              string
	}{
		{"node", "text/plain", `{"action":"kill","node":"127.0.0.1:7001"}`, 415, "unsupported_media_type"},
		{"node", "application/json", `{"action":"kill","node":"127.0.0.1:7001","extra":1}`, 400, "invalid_argument"},
		{"node", "application/json", `{"action":"kill"}`, 400, "invalid_argument"},
		{"node", "application/json", `{"action":"explode","node":"127.0.0.1:7001"}`, 400, "invalid_argument"},
		{"node", "application/json", `{"action":"kill","node":"10.0.0.1:6379"}`, 404, "not_found"},
		{"node", "application/json", `not json`, 400, "invalid_argument"},
		{"node", "application/json", `{"action":"kill","node":"` + strings.Repeat("x", 5000) + `"}`, 400, "invalid_argument"},
		{"rainstorm", "application/json", `{}`, 400, "invalid_argument"},
		{"node", "application/json", `{"action":"hang","node":"127.0.0.1:7001"}`, 200, ""},
		{"rainstorm", "application/json", `{"on":true}`, 200, ""},
	} {
		status, body := r.post(t, "/console/api/faults/"+tc.path, tc.ctype, tc.body)
		if status != tc.status || tc.code != "" && !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Errorf("POST %s %.60s = %d %s, want %d %s", tc.path, tc.body, status, body, tc.status, tc.code)
		}
	}
	if got := strings.Join(r.faults.done, ", "); got != "hang 127.0.0.1:7001, rain true" {
		t.Errorf("faults done: %s; want only the two valid ones", got)
	}
}

func TestRunAnnouncesTheRulesVersionAndStops(t *testing.T) {
	r := newRig(t, false)
	c, err := console.New(console.Deps{Instance: "a", Router: fakeRouter{}, Fleet: r.fleet, Spampede: fakeSpampede{rules: spampede.DefaultRuleSet()},
		Sampler: r.sampler, AnnounceEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); c.Run(stop) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.fleet.mu.Lock()
		a := string(r.fleet.announced["a"])
		r.fleet.mu.Unlock()
		if a == `{"rules_version":1}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no announcement of rules version 1: %q", a)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	<-done
}

// Each instance announces whether it is ready, and why not: any console
// of the fleet shows which instance a load balancer would take out.
func TestRunAnnouncesReadinessAndTheStateShowsItsOwn(t *testing.T) {
	r := newRig(t, false)
	var mu sync.Mutex
	notReady := errors.New("no Redis shard answers")
	c, err := console.New(console.Deps{Instance: "a", Router: fakeRouter{}, Fleet: r.fleet, Spampede: fakeSpampede{rules: spampede.DefaultRuleSet()},
		Sampler: r.sampler, AnnounceEvery: 10 * time.Millisecond, Now: func() time.Time { return r.now },
		Readiness: func(context.Context) error { mu.Lock(); defer mu.Unlock(); return notReady }})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); c.Run(stop) }()
	defer func() { close(stop); <-done }()
	waitAnnounced := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			r.fleet.mu.Lock()
			a := string(r.fleet.announced["a"])
			r.fleet.mu.Unlock()
			if a == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("announced %s, want %s", a, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAnnounced(`{"rules_version":1,"ready":false,"not_ready":"no Redis shard answers"}`)
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/console/api/state")
	if err != nil {
		t.Fatal(err)
	}
	var st console.State
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.Fleet) == 0 || !st.Fleet[0].Self || st.Fleet[0].Ready == nil || *st.Fleet[0].Ready || st.Fleet[0].NotReady != "no Redis shard answers" {
		t.Fatalf("this instance in the state: %s (%v); want not ready, with the reason", mustJSON(t, st.Fleet), err)
	}
	mu.Lock()
	notReady = nil
	mu.Unlock()
	waitAnnounced(`{"rules_version":1,"ready":true}`)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewNeedsItsCollaborators(t *testing.T) {
	if _, err := console.New(console.Deps{}); err == nil {
		t.Error("New without collaborators succeeded")
	}
}
