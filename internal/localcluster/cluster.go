package localcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a running local Redis Cluster. Close it when done.
type Cluster struct {
	cfg   Config
	dir   string
	nodes []*Node
	tls   *tlsFiles

	mu     sync.Mutex
	closed bool
	chain  string // the iptables chain of Isolate's rules, once made
}

// Start creates the cluster's directories, starts every node, forms the
// cluster and waits until it is really usable: cluster_state:ok everywhere,
// every replica linked to its primary and listed by every node.
// On any error it stops what it started.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid local cluster config: %w", err)
	}
	bin, err := lookupRedisServer(cfg.RedisServer)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		c, err := startOnce(ctx, cfg, bin)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// CheckInstalled reports ErrRedisNotInstalled when the redis-server a
// cluster of cfg would start (cfg.RedisServer, or the one on PATH) is not
// there: a caller can refuse before it makes anything.
func CheckInstalled(cfg Config) error {
	_, err := lookupRedisServer(cfg.RedisServer)
	return err
}

func lookupRedisServer(path string) (string, error) {
	if path == "" {
		path = "redis-server"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrRedisNotInstalled, err)
	}
	return bin, nil
}

func startOnce(ctx context.Context, cfg Config, bin string) (*Cluster, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "apollo-cluster-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	c := &Cluster{cfg: cfg, dir: dir}
	if cfg.TLS {
		if c.tls, err = writeTLSFiles(dir); err != nil {
			c.Close()
			return nil, fmt.Errorf("make TLS certificates: %w", err)
		}
	}
	if err := c.launch(ctx, bin); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.form(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("form cluster: %w", err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) launch(ctx context.Context, bin string) error {
	n := c.cfg.Primaries * (1 + c.cfg.Replicas)
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	opts := c.clientOptions()
	hosts := nodeHosts(n, c.cfg.OwnAddrs)
	for i := 0; i < n; i++ {
		nd := &Node{
			Index:   i,
			Shard:   shardOf(i, c.cfg),
			Addr:    net.JoinHostPort(hosts[i], strconv.Itoa(ports[i])),
			BusPort: ports[n+i],
			Dir:     filepath.Join(c.dir, "node-"+strconv.Itoa(ports[i])),
			bin:     bin,
			opts:    opts,
		}
		nd.conf = filepath.Join(nd.Dir, "redis.conf")
		if err := nd.writeConfig(c.cfg, c.tls); err != nil {
			return fmt.Errorf("write node config: %w", err)
		}
		if err := nd.start(); err != nil {
			return err
		}
		c.nodes = append(c.nodes, nd)
	}
	for _, nd := range c.nodes {
		if err := nd.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// nodeHosts is every node's listening address: 127.0.0.1 for all, or with
// own addresses 127.A.B.1, .2, ... on a 127.A.B.0/24 of the cluster's own,
// chosen at random so that two clusters on one machine (and their firewall
// rules) do not meet.
func nodeHosts(n int, own bool) []string {
	out := make([]string, n)
	a, b := 100+rand.IntN(150), rand.IntN(256)
	for i := range out {
		out[i] = "127.0.0.1"
		if own {
			out[i] = fmt.Sprintf("127.%d.%d.%d", a, b, i+1)
		}
	}
	return out
}

func shardOf(i int, cfg Config) int {
	if i < cfg.Primaries {
		return i
	}
	return (i - cfg.Primaries) / max(cfg.Replicas, 1)
}

func (c *Cluster) clientOptions() *redis.Options {
	return &redis.Options{
		TLSConfig:       c.TLSConfig(),
		Username:        c.cfg.User,
		Password:        c.cfg.Password,
		DialTimeout:     500 * time.Millisecond,
		ReadTimeout:     time.Second,
		WriteTimeout:    time.Second,
		MaxRetries:      -1,
		PoolSize:        2,
		DisableIdentity: true,
		Protocol:        2,
	}
}

// Dir is the cluster's own directory, removed by Close.
func (c *Cluster) Dir() string { return c.dir }

// Config is the configuration the cluster was started with.
func (c *Cluster) Config() Config { return c.cfg }

// Nodes returns every node, primaries first in creation order.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.nodes...) }

// Addrs returns every node's address, usable as seeds for a cluster client.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr
	}
	return out
}

// Close stops every process the cluster started and removes its directory.
// It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	chain := c.chain
	c.mu.Unlock()
	var errs []error
	if chain != "" {
		errs = append(errs, removeChain(context.Background(), chain))
	}
	for _, n := range c.nodes {
		errs = append(errs, n.Kill())
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}
