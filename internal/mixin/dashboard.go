package mixin

import (
	"encoding/json"
)

// The Grafana dashboard model: only what Apollo's dashboard uses, in
// Grafana's JSON schema (dashboard schemaVersion 39).
type (
	dashboard struct {
		UID           string     `json:"uid"`
		Title         string     `json:"title"`
		Tags          []string   `json:"tags"`
		Timezone      string     `json:"timezone"`
		Refresh       string     `json:"refresh"`
		SchemaVersion int        `json:"schemaVersion"`
		Time          timeRange  `json:"time"`
		Templating    templating `json:"templating"`
		Panels        []panel    `json:"panels"`
	}
	timeRange  struct{ From, To string }
	templating struct {
		List []variable `json:"list"`
	}
	variable struct {
		Name       string      `json:"name"`
		Label      string      `json:"label"`
		Type       string      `json:"type"`
		Query      string      `json:"query,omitempty"`
		Datasource *datasource `json:"datasource,omitempty"`
		IncludeAll bool        `json:"includeAll,omitempty"`
		Multi      bool        `json:"multi,omitempty"`
		AllValue   string      `json:"allValue,omitempty"`
		Refresh    int         `json:"refresh,omitempty"` // 2: on time range change
	}
	panel struct {
		ID          int         `json:"id"`
		Type        string      `json:"type"`
		Title       string      `json:"title"`
		Description string      `json:"description,omitempty"`
		GridPos     gridPos     `json:"gridPos"`
		Datasource  *datasource `json:"datasource,omitempty"`
		Targets     []target    `json:"targets,omitempty"`
		FieldConfig *fieldConf  `json:"fieldConfig,omitempty"`
	}
	gridPos    struct{ H, W, X, Y int }
	datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	target struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	}
	fieldConf struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	}
)

func (t timeRange) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"from": t.From, "to": t.To})
}

func (g gridPos) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]int{"h": g.H, "w": g.W, "x": g.X, "y": g.Y})
}

// Query is one PromQL expression of a panel, with its legend.
type Query struct{ Expr, Legend string }

// graph is a time-series panel of queries in unit.
type graph struct {
	title, help, unit string
	queries           []Query
}

// row is a titled row of graphs.
type row struct {
	title  string
	graphs []graph
}

// rows are the dashboard's content: the 2019 signals first (the router),
// then the booking pipeline, Spampede, the fleet and the HTTP edge. Every
// query reads only Apollo's own metrics; $instance filters by instance.
func rows() []row {
	return []row{
		{"Redis, as Apollo's router sees it", []graph{
			{"Commands by result", "ok, error, ambiguous (a write that may have run), unconfirmed (no replica acknowledged it). Failures are the 2019 signal.", "ops",
				[]Query{{`sum by (result) (rate(apollo_redis_commands_total{instance=~"$instance"}[$__rate_interval]))`, "{{result}}"}}},
			{"Node latency p99", "Round trip of successful requests, per node.", "s",
				[]Query{{`histogram_quantile(0.99, sum by (node, le) (rate(apollo_redis_node_latency_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, "{{node}}"}}},
			{"Nodes ejected from routing", "1 while a node is ejected (it did not answer, refused the handshake, or refused new connections at its maxclients).", "short",
				[]Query{{`max by (node) (apollo_redis_node_ejected{instance=~"$instance"})`, "{{node}}"}}},
			{"Node ejections", "Ejections a minute, by node (apollo_redis_node_ejections_total by reason says why): a node ejected again and again (a path that loses packets, a node that pauses) is seldom out for long, so the panel above hardly shows it (ApolloRedisNodeFlapping).", "short",
				[]Query{{`60 * sum by (node) (rate(apollo_redis_node_ejections_total{instance=~"$instance"}[$__rate_interval]))`, "{{node}}"}}},
			{"Credentials and rights refused", "Connections whose set-up a node refused Apollo's credentials (WRONGPASS, NOAUTH, a TLS alert against its certificate) a minute, and how many of the commands, keys or channels Apollo needs each node's ACL denies its user (asked every 30 s). Either fails what needs that node: ApolloRedisCredentialsRefused, ApolloRedisRightsDenied.", "short",
				[]Query{
					{`60 * sum by (node) (rate(apollo_redis_node_errors_total{kind="auth",instance=~"$instance"}[$__rate_interval]))`, "refused {{node}}"},
					{`max by (node) (apollo_redis_rights_denied{instance=~"$instance"})`, "rights denied {{node}}"},
				}},
			{"Slot map age", "Seconds since the slot map in use was fetched; refreshed every 5 s, so it grows only when refreshes fail.", "s",
				[]Query{{`apollo_redis_topology_age_seconds{instance=~"$instance"}`, "{{instance}}"}}},
			{"Slot redirects", "Replies that say a slot moved or is moving: moved (the slot map was old), ask (a key on the other side of a migration), tryagain (a command across a split slot, not run). TRYAGAIN that lasts is a migration left open: apollo check names it.", "ops",
				[]Query{{`sum by (kind) (rate(apollo_redis_redirects_total{instance=~"$instance"}[$__rate_interval]))`, "{{kind}}"}}},
			{"Hedges, retries, fallbacks", "Reads hedged to a second node, retries, and reads sent to a primary (or shed) because no replica could serve them.", "ops",
				[]Query{
					{`sum by (outcome) (rate(apollo_redis_hedges_total{instance=~"$instance"}[$__rate_interval]))`, "hedge {{outcome}}"},
					{`sum by (outcome) (rate(apollo_redis_retries_total{instance=~"$instance"}[$__rate_interval]))`, "retry {{outcome}}"},
					{`sum by (outcome) (rate(apollo_redis_read_fallbacks_total{instance=~"$instance"}[$__rate_interval]))`, "fallback {{outcome}}"},
				}},
			{"Write proof", "Replicas each acknowledged write was checked against, by verdict: listed (its primary lists it holding the write), holds (it said so itself), out_of_step (held behind: not waited for), down (a failed node), unconfirmed (stayed behind the write, refused, or answered as a primary: the write was answered 503).", "ops",
				[]Query{{`sum by (verdict) (rate(apollo_redis_write_proof_replicas_total{instance=~"$instance"}[$__rate_interval]))`, "{{verdict}}"}}},
			{"Replicas behind", "1 while a replica is too far behind its primary to serve reads.", "short",
				[]Query{{`max by (node) (apollo_redis_replica_behind{instance=~"$instance"})`, "{{node}}"}}},
			{"Node memory", "used_memory and maxmemory per node (0: no limit). At its maxmemory a noeviction node refuses every write (OOM, a 503 for every change on its shard).", "bytes",
				[]Query{
					{`max by (node) (apollo_redis_node_used_memory_bytes{instance=~"$instance"})`, "used {{node}}"},
					{`max by (node) (apollo_redis_node_maxmemory_bytes{instance=~"$instance"})`, "maxmemory {{node}}"},
				}},
			{"Nodes that cannot persist", "1 while a node's last RDB snapshot or AOF write failed (a full disk, a directory it may no longer write): a primary in this state refuses every write (MISCONF, a 503 for every change on its shard).", "short",
				[]Query{{`max by (node) (apollo_redis_node_cannot_persist{instance=~"$instance"})`, "{{node}}"}}},
			{"Primaries restarted", "Primaries found restarted before any failover (a new run_id, still a primary), by whether they came back with their data: kept (an append-only file, say), lost (fewer than half their keys: their replicas copy them, and the shard's bookings are gone). A lost one is an incident: ApolloRedisPrimaryRestartedWithoutItsData.", "short",
				[]Query{{`max by (data) (increase(apollo_redis_primary_restarts_total{instance=~"$instance"}[$__rate_interval]))`, "{{data}}"}}},
			{"Keys evicted", "Keys a node deleted to make room (evicted_keys rising): bookings or reservations may be gone. Any is an incident; a node that may evict at all is alerted on.", "short",
				[]Query{
					{`max by (node) (increase(apollo_redis_node_evicted_keys{instance=~"$instance"}[$__rate_interval]))`, "evicted {{node}}"},
					{`max by (node) (apollo_redis_node_may_evict{instance=~"$instance"})`, "may evict {{node}}"},
				}},
			{"Clock offset", "Each node's clock minus each instance's (TIME), and the cluster's time (the nodes' median, which Apollo keeps) minus each instance's. Write deadlines are sent in the node's clock, but keys expire by it: beyond 0.5 s, fix NTP.", "s",
				[]Query{
					{`max by (instance, node) (apollo_redis_node_clock_offset_seconds{instance=~"$instance"})`, "{{instance}} → {{node}}"},
					{`max by (instance) (apollo_cluster_clock_offset_seconds{instance=~"$instance"})`, "{{instance}} → cluster"},
				}},
		}},
		{"Bookings", []graph{
			{"Bookings by outcome", "created, turned away by Spampede, allocated, unallocated (deadline passed), cancelled.", "ops",
				[]Query{{`sum by (outcome) (rate(apollo_bookings_total{instance=~"$instance"}[$__rate_interval]))`, "{{outcome}}"}}},
			{"Deadline overrun p99", "How late past its deadline a booking without a driver is given up: grows when bookings are stuck.", "s",
				[]Query{{`histogram_quantile(0.99, sum by (le) (rate(apollo_booking_deadline_overrun_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, "p99"}}},
		}},
		{"Spampede", []graph{
			{"Admission decisions", "By outcome: admitted, rejected, rejected_cached, shadow_rejected, fail_open (the counters did not answer), no_rule.", "ops",
				[]Query{{`sum by (outcome) (rate(apollo_spampede_decisions_total{instance=~"$instance"}[$__rate_interval]))`, "{{outcome}}"}}},
			{"Cells tripped", "Cells that crossed their threshold.", "short",
				[]Query{{`sum(increase(apollo_spampede_trips_total{instance=~"$instance"}[$__rate_interval]))`, "trips"}}},
		}},
		{"Fleet", []graph{
			{"Partitions owned", "Open-bookings partitions each instance holds the lease of; they sum to --partitions.", "short",
				[]Query{{`apollo_fleet_partitions_owned{instance=~"$instance"}`, "{{instance}}"}}},
			{"Lease changes", "Leases acquired, released (handed back) and lost.", "ops",
				[]Query{{`sum by (change) (rate(apollo_fleet_lease_changes_total{instance=~"$instance"}[$__rate_interval]))`, "{{change}}"}}},
			{"Ready", "1 while /readyz answers 200.", "short",
				[]Query{{`apollo_ready{instance=~"$instance"}`, "{{instance}}"}}},
			{"Log lines dropped", "Log lines a minute each instance dropped because its stderr did not take them (a stopped log collector, a full container log buffer), and writes stderr refused. Requests never wait for the log output; its logs of the time are incomplete: ApolloLogLinesDropped.", "short",
				[]Query{
					{`60 * sum by (instance) (rate(apollo_log_lines_dropped_total{instance=~"$instance"}[$__rate_interval]))`, "dropped {{instance}}"},
					{`60 * sum by (instance) (rate(apollo_log_write_errors_total{instance=~"$instance"}[$__rate_interval]))`, "write errors {{instance}}"},
				}},
		}},
		{"HTTP API", []graph{
			{"Requests by status", "Public API answers by status code.", "reqps",
				[]Query{{`sum by (code) (rate(apollo_http_requests_total{instance=~"$instance"}[$__rate_interval]))`, "{{code}}"}}},
			{"Latency p99 by route", "", "s",
				[]Query{{`histogram_quantile(0.99, sum by (route, le) (rate(apollo_http_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, "{{route}}"}}},
		}},
	}
}

// Queries are every query of the dashboard, for tests that run them.
func Queries() []Query {
	var qs []Query
	for _, r := range rows() {
		for _, g := range r.graphs {
			qs = append(qs, g.queries...)
		}
	}
	return qs
}

// Dashboard is the Grafana dashboard as JSON, as committed in
// monitoring/dashboards/apollo.json.
func Dashboard() ([]byte, error) {
	ds := &datasource{Type: "prometheus", UID: "${datasource}"}
	d := dashboard{UID: "apollo", Title: "Apollo", Tags: []string{"apollo", "redis"}, Timezone: "utc", Refresh: "10s",
		SchemaVersion: 39, Time: timeRange{From: "now-1h", To: "now"},
		Templating: templating{List: []variable{
			{Name: "datasource", Label: "Data source", Type: "datasource", Query: "prometheus"},
			{Name: "instance", Label: "Instance", Type: "query", Query: "label_values(apollo_ready, instance)", Datasource: ds,
				IncludeAll: true, Multi: true, AllValue: ".*", Refresh: 2},
		}}}
	id, y := 1, 0
	for _, r := range rows() {
		d.Panels = append(d.Panels, panel{ID: id, Type: "row", Title: r.title, GridPos: gridPos{H: 1, W: 24, X: 0, Y: y}})
		id, y = id+1, y+1
		for i, g := range r.graphs {
			p := panel{ID: id, Type: "timeseries", Title: g.title, Description: g.help, Datasource: ds,
				GridPos: gridPos{H: 8, W: 8, X: (i % 3) * 8, Y: y + (i/3)*8}, FieldConfig: &fieldConf{}}
			p.FieldConfig.Defaults.Unit = g.unit
			for k, q := range g.queries {
				p.Targets = append(p.Targets, target{RefID: string(rune('A' + k)), Expr: q.Expr, LegendFormat: q.Legend})
			}
			d.Panels = append(d.Panels, p)
			id++
		}
		y += ((len(r.graphs) + 2) / 3) * 8
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
