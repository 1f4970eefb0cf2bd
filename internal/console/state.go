package console

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// State is everything the page shows, as /console/api/state answers it.
type State struct {
	At       time.Time    `json:"at"`
	Instance string       `json:"instance"`
	Cluster  Cluster      `json:"cluster"`
	Traffic  Figures      `json:"traffic"`
	Pipeline Pipeline     `json:"pipeline"`
	Spampede SpampedeView `json:"spampede"`
	// Fleet is every member of the fleet, this instance first, with what
	// each last announced: its readiness and its rules version.
	Fleet  []Member    `json:"fleet"`
	Faults *FaultsView `json:"faults,omitempty"` // apollo dev only
	// Problems lists the parts that could not be read this time (Redis
	// views); the rest of the state is still current.
	Problems []string `json:"problems,omitempty"`
}

// Figures are counters as totals (the values /metrics shows) and as rates
// per second over the last WindowSeconds, by the same keys.
type Figures struct {
	PerSecond     map[string]float64 `json:"per_second"`
	Totals        map[string]float64 `json:"totals"`
	WindowSeconds float64            `json:"window_seconds"`
}

// Cluster is the cluster as this instance's router sees it.
type Cluster struct {
	Policy string `json:"policy"`
	// SlotMapAgeSeconds is how old the slot map in use is.
	SlotMapAgeSeconds float64              `json:"slot_map_age_seconds"`
	SlotMapAt         time.Time            `json:"slot_map_at"`
	LastRefresh       redisroute.Refreshed `json:"last_refresh"`
	Shards            []Shard              `json:"shards"`
}

// Shard is one primary and its replicas, primary first.
type Shard struct {
	Index int    `json:"index"`
	Nodes []Node `json:"nodes"`
}

// Node is a node's router status with its figures from the metrics.
type Node struct {
	redisroute.NodeStatus
	// P50Ms and P99Ms are the round-trip quantiles of its requests over
	// the window; null when it answered none.
	P50Ms      *float64 `json:"p50_ms"`
	P99Ms      *float64 `json:"p99_ms"`
	ErrorsPerS float64  `json:"errors_per_s"`
	Errors     float64  `json:"errors"`    // failed requests since start
	Ejections  float64  `json:"ejections"` // times ejected since start
}

// Pipeline is the booking pipeline: outcomes, and the open bookings of
// the whole fleet by partition and owner.
type Pipeline struct {
	Figures
	Open int64 `json:"open"`
	// Ages counts the open bookings read (AgesRead of Open: View reads a
	// sample per partition, the first due) by age band.
	Ages       []AgeBand      `json:"ages"`
	AgesRead   int            `json:"ages_read"`
	Unowned    int            `json:"unowned_partitions"`
	Owners     []Owner        `json:"owners"`
	Partitions []PartitionRow `json:"partitions"`
}

// PartitionRow is a partition of the open-bookings index.
type PartitionRow struct {
	redisstore.PartitionView
	// OverdueSeconds is how long past due its earliest open booking is:
	// a partition nobody works keeps growing it.
	OverdueSeconds float64 `json:"overdue_seconds"`
	// OldestSeconds is the age of its oldest open booking read; 0 when
	// none was.
	OldestSeconds float64 `json:"oldest_seconds"`
}

// AgeBand is how many open bookings are younger than UnderSeconds (and
// not younger than the band before); the last band has no bound (0).
type AgeBand struct {
	UnderSeconds float64 `json:"under_seconds"`
	Count        int     `json:"count"`
}

// ageBands are the bounds of Pipeline.Ages: a booking gives up after the
// allocation timeout (30 s by default), so one past it is stuck.
var ageBands = []float64{5, 15, 30, 0}

// Owner is an instance and what it holds of the index.
type Owner struct {
	Instance   string `json:"instance"`
	Partitions int    `json:"partitions"`
	Open       int64  `json:"open"`
}

// SpampedeView is the filter: decisions, rules and tripped cells.
type SpampedeView struct {
	Figures
	Rules   spampede.RuleSet `json:"rules"`
	Tripped []TrippedCell    `json:"tripped"`
}

// Member is an instance of the fleet as it announced itself (every 2 s):
// the rules version it has in force and whether it is ready.
type Member struct {
	Instance     string `json:"instance"`
	RulesVersion int64  `json:"rules_version"`
	Self         bool   `json:"self"`
	// Known is false for a member that announced nothing (yet).
	Known bool `json:"known"`
	// Ready is its /readyz verdict, nil when it announced none (a build
	// without, or not announced yet); NotReady is why not.
	Ready    *bool  `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
}

// TrippedCell is a cell turning bookings away, with its polygon.
type TrippedCell struct {
	Cell    string    `json:"cell"`
	Service string    `json:"service"`
	Rule    string    `json:"rule"`
	Count   float64   `json:"count"`
	Until   time.Time `json:"until"`
	Shadow  bool      `json:"shadow"`
	// Polygon is the cell's corners, [lat, lng], counter-clockwise from
	// the south-west.
	Polygon [][2]float64 `json:"polygon"`
}

// announcement is what an instance announces to the others.
type announcement struct {
	RulesVersion int64  `json:"rules_version"`
	Ready        *bool  `json:"ready,omitempty"`
	NotReady     string `json:"not_ready,omitempty"`
}

// window is the span rates and quantiles are computed over.
const window = 5 * time.Second

// maxTripped bounds the cells listed and drawn.
const maxTripped = 200

// state builds the State now.
func (c *Console) state(ctx context.Context) State {
	now := c.now()
	st := State{At: now, Instance: c.d.Instance}
	old, cur, _ := c.d.Sampler.window(window)
	st.Cluster = c.cluster(old, cur, now)
	st.Traffic = traffic(old, cur)
	st.Pipeline = Pipeline{Figures: figuresByLabel(old, cur, "apollo_bookings_total", "outcome")}
	if err := c.partitions(ctx, &st.Pipeline, now); err != nil {
		st.Problems = append(st.Problems, "open bookings: "+err.Error())
	}
	st.Spampede = c.spampede(old, cur, now)
	fl, err := c.members(ctx, now, st.Spampede.Rules.Version)
	if err != nil {
		st.Problems = append(st.Problems, "the fleet's announcements: "+err.Error())
	}
	st.Fleet = fl
	if c.d.Faults != nil {
		v := c.d.Faults.View()
		st.Faults = &v
	}
	return st
}

func (c *Console) cluster(old, cur sample, now time.Time) Cluster {
	rs := c.d.Router.Status()
	cl := Cluster{Policy: rs.Policy, SlotMapAt: rs.SlotMapAt, LastRefresh: rs.LastRefresh,
		SlotMapAgeSeconds: now.Sub(rs.SlotMapAt).Seconds()}
	for _, ns := range rs.Nodes {
		for len(cl.Shards) <= ns.Shard {
			cl.Shards = append(cl.Shards, Shard{Index: len(cl.Shards)})
		}
		node := map[string]string{"node": ns.Addr}
		n := Node{NodeStatus: ns,
			P50Ms:      ms(quantile(0.5, old, cur, "apollo_redis_node_latency_seconds", node)),
			P99Ms:      ms(quantile(0.99, old, cur, "apollo_redis_node_latency_seconds", node)),
			ErrorsPerS: rate(old, cur, "apollo_redis_node_errors_total", node),
			Errors:     cur.total("apollo_redis_node_errors_total", node),
			Ejections:  cur.total("apollo_redis_node_ejections_total", node),
		}
		cl.Shards[ns.Shard].Nodes = append(cl.Shards[ns.Shard].Nodes, n)
	}
	return cl
}

// ms is seconds as milliseconds, nil for NaN.
func ms(s float64) *float64 {
	if math.IsNaN(s) {
		return nil
	}
	v := s * 1000
	return &v
}

// trafficKeys names the traffic figures: key, metric, label matchers.
var trafficKeys = []struct {
	key, name string
	where     map[string]string
}{
	{"commands_ok", "apollo_redis_commands_total", map[string]string{"result": "ok"}},
	{"commands_error", "apollo_redis_commands_total", map[string]string{"result": "error"}},
	{"commands_ambiguous", "apollo_redis_commands_total", map[string]string{"result": "ambiguous"}},
	{"commands_unconfirmed", "apollo_redis_commands_total", map[string]string{"result": "unconfirmed"}},
	{"hedges_sent", "apollo_redis_hedges_total", map[string]string{"outcome": "sent"}},
	{"hedges_won", "apollo_redis_hedges_total", map[string]string{"outcome": "won"}},
	{"retries_sent", "apollo_redis_retries_total", map[string]string{"outcome": "sent"}},
	{"fallbacks_sent", "apollo_redis_read_fallbacks_total", map[string]string{"outcome": "sent"}},
	{"reads_shed", "apollo_redis_read_fallbacks_total", map[string]string{"outcome": "shed"}},
}

// traffic is the router's and the API's figures; calls are the API's
// requests by status class (2xx, 4xx, 5xx).
func traffic(old, cur sample) Figures {
	f := newFigures(old, cur)
	for _, k := range trafficKeys {
		f.Totals[k.key] = cur.total(k.name, k.where)
		f.PerSecond[k.key] = rate(old, cur, k.name, k.where)
	}
	for _, class := range []string{"2xx", "4xx", "5xx"} {
		f.Totals["calls_"+class], f.PerSecond["calls_"+class] = 0, 0
	}
	rates := ratesByLabel(old, cur, "apollo_http_requests_total", "code", nil)
	for code, v := range cur.byLabel("apollo_http_requests_total", "code", nil) {
		if class := codeClass(code); class != "" {
			f.Totals["calls_"+class] += v
			f.PerSecond["calls_"+class] += rates[code]
		}
	}
	return f
}

// codeClass is "2xx" for "200" and so on; "" for what is not a status.
func codeClass(code string) string {
	n, err := strconv.Atoi(code)
	if err != nil || n < 100 || n > 599 {
		return ""
	}
	if n < 400 {
		return "2xx" // 1xx and 3xx are not answered by the API; counted as served
	}
	return strconv.Itoa(n/100) + "xx"
}

func newFigures(old, cur sample) Figures {
	return Figures{PerSecond: map[string]float64{}, Totals: map[string]float64{}, WindowSeconds: cur.at.Sub(old.at).Seconds()}
}

// figuresByLabel is a counter's totals and rates per value of label.
func figuresByLabel(old, cur sample, name, label string) Figures {
	f := newFigures(old, cur)
	f.Totals = cur.byLabel(name, label, nil)
	f.PerSecond = ratesByLabel(old, cur, name, label, nil)
	return f
}

// partitions fills in the fleet's open bookings, read from Redis at most
// once a second however many pages are open.
func (c *Console) partitions(ctx context.Context, p *Pipeline, now time.Time) error {
	f := c.fleetState(ctx, now)
	view := f.view
	if f.viewErr != nil && len(view) == 0 {
		return f.viewErr
	}
	owners := map[string]*Owner{}
	for _, b := range ageBands {
		p.Ages = append(p.Ages, AgeBand{UnderSeconds: b})
	}
	for _, v := range view {
		row := PartitionRow{PartitionView: v}
		if !v.NextDue.IsZero() && now.After(v.NextDue) {
			row.OverdueSeconds = now.Sub(v.NextDue).Seconds()
		}
		for _, created := range v.Created {
			age := max(now.Sub(created).Seconds(), 0)
			row.OldestSeconds = max(row.OldestSeconds, age)
			p.AgesRead++
			i := 0
			for i < len(ageBands)-1 && age >= ageBands[i] {
				i++
			}
			p.Ages[i].Count++
		}
		p.Partitions = append(p.Partitions, row)
		p.Open += v.Open
		if v.Owner == "" {
			p.Unowned++
			continue
		}
		o := owners[v.Owner]
		if o == nil {
			o = &Owner{Instance: v.Owner}
			owners[v.Owner] = o
		}
		o.Partitions++
		o.Open += v.Open
	}
	for _, o := range owners {
		p.Owners = append(p.Owners, *o)
	}
	slices.SortFunc(p.Owners, func(a, b Owner) int { return cmp.Compare(a.Instance, b.Instance) })
	return f.viewErr // some partitions unread: the rest are shown
}

// fleetEvery is how often the console reads the fleet's state in Redis,
// however many pages poll it: about 3 commands a partition and one per
// member, each time.
const fleetEvery = 2 * time.Second

// fleetRead is what the console last read of the fleet, errors included,
// so that a Redis outage costs one attempt per fleetEvery, not one per poll.
type fleetRead struct {
	at       time.Time
	view     []redisstore.PartitionView
	viewErr  error
	members  []string
	about    map[string][]byte
	aboutErr error
}

// fleetState is the cached fleet read, read again when older than
// fleetEvery. Polls wait for a read in progress rather than start another.
func (c *Console) fleetState(ctx context.Context, now time.Time) fleetRead {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fleet.at.IsZero() && now.Sub(c.fleet.at) < fleetEvery && !now.Before(c.fleet.at) {
		return c.fleet
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	f := fleetRead{at: now}
	f.view, f.viewErr = c.d.Fleet.View(ctx)
	if f.members, f.aboutErr = c.d.Fleet.Members(ctx, now); f.aboutErr == nil {
		f.members = c.withAside(ctx, now, f.members)
		f.about, f.aboutErr = c.d.Fleet.Announcements(ctx, f.members)
	}
	c.fleet = f
	return f
}

func (c *Console) spampede(old, cur sample, now time.Time) SpampedeView {
	sv := SpampedeView{Figures: figuresByLabel(old, cur, "apollo_spampede_decisions_total", "outcome"), Rules: c.d.Spampede.Rules()}
	for _, cs := range c.d.Spampede.TrippedCells(now, maxTripped) {
		b := cs.Cell.Bounds()
		sv.Tripped = append(sv.Tripped, TrippedCell{Cell: cs.Cell.String(), Service: cs.Service, Rule: cs.Rule,
			Count: cs.Count, Until: cs.Until, Shadow: cs.Shadow,
			Polygon: [][2]float64{{b.MinLat, b.MinLng}, {b.MinLat, b.MaxLng}, {b.MaxLat, b.MaxLng}, {b.MaxLat, b.MinLng}}})
	}
	return sv
}

// withAside is members and the instances that report their reach without
// being members (standing aside, behind the others: the ones a load
// balancer is taking out, which on-call most needs to see). A failed read
// of the reports leaves the members as they are.
func (c *Console) withAside(ctx context.Context, now time.Time, members []string) []string {
	if c.d.Reaches == nil {
		return members
	}
	reports, err := c.d.Reaches.Reaches(ctx, now)
	if err != nil {
		return members
	}
	out := slices.Clone(members)
	for _, r := range reports {
		if !slices.Contains(out, r.ID) {
			out = append(out, r.ID)
		}
	}
	return out
}

// members lists every member of the fleet: this one first, with the rules
// version of its own filter and the readiness it last announced, then the
// others from their announcements.
func (c *Console) members(ctx context.Context, now time.Time, rules int64) ([]Member, error) {
	f := c.fleetState(ctx, now)
	out := []Member{{Instance: c.d.Instance, RulesVersion: rules, Self: true, Known: true}}
	if own := c.own.Load(); own != nil {
		out[0].Ready, out[0].NotReady = own.Ready, own.NotReady
	}
	for _, id := range f.members {
		if id == c.d.Instance {
			continue
		}
		m := Member{Instance: id}
		var a announcement
		if raw, ok := f.about[id]; ok && json.Unmarshal(raw, &a) == nil {
			m.RulesVersion, m.Known, m.Ready, m.NotReady = a.RulesVersion, true, a.Ready, a.NotReady
		}
		out = append(out, m)
	}
	slices.SortFunc(out[1:], func(a, b Member) int { return cmp.Compare(a.Instance, b.Instance) })
	return out, f.aboutErr
}
