package clustercheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Options says which cluster to check and how Apollo reads from it.
type Options struct {
	Addrs              []string
	Username, Password string
	TLS                *tls.Config
	SourceAddr         netip.Addr // Apollo's --redis-source-addr: its ACL and firewall view
	ReadPolicy         string
	Timeout            time.Duration // per command
	// Rights are the commands Apollo's user must be allowed to run
	// (redisstore.Rights); each node is asked which it denies.
	Rights []redisroute.Right
}

// Thresholds of the findings.
const (
	maxNodeTimeout   = 5 * time.Second
	maxLagBytes      = 1 << 20
	minReplicasShard = 2
)

// Run inspects the cluster reachable at opts.Addrs.
func Run(ctx context.Context, opts Options) (Report, error) {
	rep := Report{ReadPolicy: opts.ReadPolicy, User: configuredUser(opts), CheckedAt: time.Now()}
	if len(opts.Addrs) == 0 {
		return rep, errors.New("at least one seed address is needed (--redis-addrs)")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	seed, view, err := firstView(ctx, opts)
	if err != nil {
		return rep, err
	}
	rep.Seed = seed
	rep.Nodes, rep.Shards = topology(view)
	settings(ctx, opts, seed, &rep)
	for i := range rep.Nodes {
		probe(ctx, opts, &rep.Nodes[i], rep.Nodes)
		access(ctx, opts, &rep.Nodes[i])
	}
	assess(&rep)
	return rep, nil
}

func client(opts Options, addr string, readonly bool) *redis.Client {
	o := &redis.Options{Addr: addr, Username: opts.Username, Password: opts.Password, TLSConfig: opts.TLS,
		Dialer: redisroute.Dialer(opts.SourceAddr, opts.TLS), DialTimeout: opts.Timeout, ReadTimeout: opts.Timeout, WriteTimeout: opts.Timeout, MaxRetries: -1,
		DialerRetries: 1, PoolSize: 1, Protocol: 2, DisableIdentity: true}
	if readonly {
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	}
	return redis.NewClient(o)
}

// firstView returns CLUSTER NODES from the first seed that answers.
func firstView(ctx context.Context, opts Options) (string, string, error) {
	var errs []error
	for _, a := range opts.Addrs {
		c := client(opts, a, false)
		s, err := c.ClusterNodes(ctx).Result()
		c.Close()
		if err == nil {
			return a, s, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
	}
	return "", "", fmt.Errorf("no seed answered CLUSTER NODES: %w", errors.Join(errs...))
}

// topology parses CLUSTER NODES into nodes and shards.
func topology(view string) ([]Node, []Shard) {
	var nodes []Node
	byID := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(view), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		n := Node{Addr: addr, ID: f[0], Flags: strings.Split(f[2], ","), Role: "replica", Slots: countSlots(f[8:])}
		if has(n.Flags, "master") {
			n.Role = "primary"
		}
		if f[3] != "-" {
			n.Primary = f[3] // an id for now; an address below
		}
		byID[n.ID] = len(nodes)
		nodes = append(nodes, n)
	}
	var shards []Shard
	shardOf := map[string]int{}
	for _, n := range nodes {
		if n.Role == "primary" && n.Slots > 0 {
			shardOf[n.ID] = len(shards)
			shards = append(shards, Shard{Primary: n.Addr, Slots: n.Slots})
		}
	}
	for i, n := range nodes {
		if n.Primary == "" {
			continue
		}
		if p, ok := byID[n.Primary]; ok {
			nodes[i].Primary = nodes[p].Addr
			if s, ok := shardOf[nodes[p].ID]; ok {
				shards[s].Replicas = append(shards[s].Replicas, n.Addr)
			}
		}
	}
	return nodes, shards
}

func countSlots(fields []string) int {
	n := 0
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue // a migrating or importing slot marker
		}
		lo, hi, ok := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += b - a + 1
	}
	return n
}

func has(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}

// settings reads cluster state and the configuration that decides exposure.
func settings(ctx context.Context, opts Options, seed string, rep *Report) {
	c := client(opts, seed, false)
	defer c.Close()
	if info, err := c.ClusterInfo(ctx).Result(); err == nil {
		rep.ClusterState = infoField(info, "cluster_state")
		rep.SlotsCovered, _ = strconv.Atoi(infoField(info, "cluster_slots_ok"))
	}
	if v, err := c.ConfigGet(ctx, "cluster-node-timeout").Result(); err == nil {
		rep.NodeTimeoutMs, _ = strconv.ParseInt(v["cluster-node-timeout"], 10, 64)
	}
	if v, err := c.ConfigGet(ctx, "cluster-allow-reads-when-down").Result(); err == nil {
		rep.AllowReadsWhenDown = v["cluster-allow-reads-when-down"]
	}
}

func infoField(info, key string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return ""
}

// probe reads a key of the node's own shard on the node itself (READONLY on
// a replica), and for a replica reads its replication state.
func probe(ctx context.Context, opts Options, n *Node, all []Node) {
	if has(n.Flags, "fail") || has(n.Flags, "noaddr") {
		n.Error = "flagged as failed by the cluster"
		return
	}
	var expiry atomic.Int64 // set by the handshake
	tlsOpts := opts
	tlsOpts.TLS = redisroute.WithCertExpiry(opts.TLS, func(at time.Time) { expiry.Store(at.Unix()) })
	c := client(tlsOpts, n.Addr, n.Role == "replica")
	defer c.Close()
	defer func() {
		if at := expiry.Load(); at != 0 {
			t := time.Unix(at, 0)
			n.CertExpiry = &t
		}
	}()
	start := time.Now()
	err := c.Exists(ctx, "apollo:check").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "MOVED") && !strings.HasPrefix(err.Error(), "ASK") {
		n.Error = err.Error()
		return
	}
	// A MOVED or ASK answer is an answer: the node is alive and routing.
	n.Reachable = true
	n.ProbeMs = float64(time.Since(start).Microseconds()) / 1000
	n.Persistence = readPersistence(ctx, c)
	n.Memory = readMemory(ctx, c, n.Addr)
	if d, err := redisroute.ReadPersistence(ctx, c, n.Addr); err == nil {
		n.Disk = &d
	}
	if clk, err := redisroute.ReadClock(ctx, c, time.Now); err == nil {
		clk.Addr = n.Addr
		n.Clock = &clk
	}
	if n.Role != "replica" {
		n.OpenSlots = readOpenSlots(ctx, c)
		return
	}
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return
	}
	up := infoField(info, "master_link_status") == "up"
	n.LinkUp = &up
	if off, err := strconv.ParseInt(infoField(info, "slave_repl_offset"), 10, 64); err == nil {
		if p := primaryOffset(ctx, opts, n.Primary); p >= 0 {
			lag := max(p-off, 0)
			n.LagBytes = &lag
		}
	}
}

func primaryOffset(ctx context.Context, opts Options, addr string) int64 {
	if addr == "" {
		return -1
	}
	c := client(opts, addr, false)
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return -1
	}
	off, err := strconv.ParseInt(infoField(info, "master_repl_offset"), 10, 64)
	if err != nil {
		return -1
	}
	return off
}
