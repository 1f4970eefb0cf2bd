package localcluster

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// Config describes the shape and settings of a local cluster.
type Config struct {
	// Primaries is the number of shards; each owns an equal share of the 16384 slots.
	Primaries int
	// Replicas is the number of replicas per primary.
	Replicas int
	// NodeTimeout is cluster-node-timeout: how long a node may be unreachable
	// before the others flag it as failing. Short by default so that drills
	// and tests see failovers in seconds rather than the production 15 s.
	NodeTimeout time.Duration
	// Persistence is what each node keeps on disk (PersistenceNone by
	// default: nothing survives a restart).
	Persistence Persistence
	// Password, when set, is required from clients (requirepass) and used
	// between replicas and primaries (masterauth).
	Password string
	// User, when set with Password, is an ACL user with full access that
	// replicas also authenticate as (masteruser).
	User string
	// TLS serves clients, the cluster bus and replication over TLS only,
	// with a throwaway CA (see Cluster.TLSConfig and Cluster.CAFile).
	TLS bool
	// TLSClientAuth, with TLS, refuses clients without a certificate the
	// CA signed (tls-auth-clients yes, Redis's default; see
	// Cluster.IssueClientCert).
	TLSClientAuth bool
	// ExtraArgs are appended to every node's configuration, as
	// "directive value" lines (for example "maxmemory 64mb").
	ExtraArgs []string
	// Dir is the parent directory of the cluster's own temporary directory.
	// Empty means os.TempDir().
	Dir string
	// RedisServer is the redis-server binary; empty means look it up on PATH.
	RedisServer string
	// StartTimeout bounds how long Start waits for the cluster to be usable.
	StartTimeout time.Duration
	// OwnAddrs puts every node on a loopback address of its own
	// (127.A.B.i, with A.B chosen at random per cluster), listening on it and
	// connecting from it (bind-source-addr), so that Isolate can cut a node
	// off from the others while clients, which connect from 127.0.0.1,
	// still reach it. Plain TCP only.
	OwnAddrs bool
}

// DefaultConfig is the shape of the 2019 Apollo cluster: 3 primaries with 2
// replicas each, with a 5 s node timeout.
func DefaultConfig() Config {
	return Config{
		Primaries:    3,
		Replicas:     2,
		NodeTimeout:  5 * time.Second,
		StartTimeout: 60 * time.Second,
	}
}

// RegisterFlags registers the cluster's flags on fs, with c's values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Primaries, "primaries", c.Primaries, "number of primaries (shards)")
	fs.IntVar(&c.Replicas, "replicas", c.Replicas, "replicas per primary")
	fs.DurationVar(&c.NodeTimeout, "node-timeout", c.NodeTimeout, "cluster-node-timeout of every node")
	fs.Var(&c.Persistence, "persistence", "what each node keeps on disk: none, rdb (a snapshot each second with a change), aof (appendfsync everysec) or aof-always (default none)")
	fs.StringVar(&c.Password, "password", c.Password, "require this password from clients (requirepass/masterauth)")
	fs.StringVar(&c.User, "user", c.User, "with --password: also create this ACL user and replicate as it")
	fs.BoolVar(&c.TLS, "tls", c.TLS, "serve clients, the cluster bus and replication over TLS only (throwaway CA)")
	fs.StringVar(&c.Dir, "dir", c.Dir, "parent directory for the nodes' directories (default: the system temp dir)")
	fs.StringVar(&c.RedisServer, "redis-server", c.RedisServer, "path of the redis-server binary (default: looked up on PATH)")
}

// Validate reports the first problem with c, if any.
func (c Config) Validate() error {
	var errs []error
	if c.Primaries < 1 || c.Primaries > 64 {
		errs = append(errs, fmt.Errorf("primaries must be within [1, 64], got %d", c.Primaries))
	}
	if c.Replicas < 0 || c.Replicas > 8 {
		errs = append(errs, fmt.Errorf("replicas must be within [0, 8], got %d", c.Replicas))
	}
	if c.NodeTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("node timeout must be at least 100ms, got %s", c.NodeTimeout))
	}
	if c.User != "" && c.Password == "" {
		errs = append(errs, errors.New("user needs a password"))
	}
	if strings.ContainsAny(c.Password+c.User, " \t\r\n\"'") {
		errs = append(errs, errors.New("user and password must not contain spaces or quotes"))
	}
	for _, a := range c.ExtraArgs {
		if strings.ContainsAny(a, "\r\n") {
			errs = append(errs, fmt.Errorf("extra argument %q must be on one line", a))
		}
	}
	if _, err := ParsePersistence(string(c.Persistence)); err != nil {
		errs = append(errs, err)
	}
	if c.TLSClientAuth && !c.TLS {
		errs = append(errs, errors.New("client certificates (TLSClientAuth) need TLS"))
	}
	if c.OwnAddrs && c.TLS {
		errs = append(errs, errors.New("own addresses are for plain TCP clusters (the TLS certificate is for 127.0.0.1)"))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, errors.New("start timeout must be positive"))
	}
	return errors.Join(errs...)
}
