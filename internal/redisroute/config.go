package redisroute

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/secret"
)

// Policy chooses which node of a shard serves a read. Writes always go to the primary.
type Policy string

// Read policies.
const (
	// Primary reads from the primary; a replica serves a read only when the
	// primary is ejected or did not answer.
	Primary Policy = "primary"
	// ReplicaPreferred reads from a healthy replica, falling back per command
	// to the other replica or to the primary (within the primary's fallback cap).
	ReplicaPreferred Policy = "replica-preferred"
	// Nearest reads from the healthy node with the lowest measured latency.
	Nearest Policy = "nearest"
	// Legacy2019 reproduces the 2019 setup for drills only: random replica per
	// command, no health tracking, no hedges or retries, topology refreshed
	// only every 60 s, and the whole pipeline fails when one command fails.
	Legacy2019 Policy = "legacy-2019"
)

// Policies lists every valid policy.
func Policies() []Policy { return []Policy{Primary, ReplicaPreferred, Nearest, Legacy2019} }

// ParsePolicy parses a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown read policy %q (want one of %s)", s, policyList())
}

func policyList() string {
	var names []string
	for _, p := range Policies() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// Set implements flag.Value.
func (p *Policy) Set(s string) error {
	v, err := ParsePolicy(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

func (p *Policy) String() string { return string(*p) }

// Config configures a Router. Start from DefaultConfig.
type Config struct {
	// Addrs are seed nodes (host:port); any one reachable node is enough.
	Addrs []string
	// Username and Password authenticate every connection (AUTH / ACL).
	Username, Password string
	// PasswordFile, when set, holds the password: read again for every
	// new connection, so that a rotated secret is used without a restart
	// (credentials.go). Password is then what it held at start.
	PasswordFile string
	// TLS, when non-nil, is used for every connection.
	TLS *tls.Config
	// TLSCertFile and TLSKeyFile, when set, hold the client certificate
	// presented to Redis: read again for every new connection, so that a
	// certificate renewed on disk is used without a restart
	// (tlscerts.go). TLS.Certificates holds what they held at start.
	TLSCertFile, TLSKeyFile string
	// SourceAddr, when valid, is the local address every connection to
	// Redis is made from (see Dialer).
	SourceAddr netip.Addr
	// Policy decides where reads go.
	Policy Policy

	// DialTimeout bounds connecting to a node.
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for a node's reply on the wire. Hedging and
	// ejection act long before it; it only frees connections to a hung node.
	ReadTimeout time.Duration
	// CallTimeout is the deadline of a call whose context has none.
	CallTimeout time.Duration
	// AckTimeout bounds the WAIT for replica acknowledgements of writes that ask for them.
	AckTimeout time.Duration
	// PoolSize is the number of connections per node.
	PoolSize int
	// CoalesceAfter is how many plain-read sub-pipelines may be in flight to
	// one node before further plain reads to it queue and go out together,
	// in one pipeline, as the first returns (see coalescer). 0 sends each on
	// its own. 1 by default: in the README's throughput figures it cut the
	// router's CPU per call by 15 % under load; a read to a node with no
	// read in flight goes at once, as without it.
	CoalesceAfter int

	// RefreshInterval is the periodic topology refresh.
	RefreshInterval time.Duration
	// RefreshMinInterval rate-limits refreshes triggered by errors.
	RefreshMinInterval time.Duration

	// HedgeMin and HedgeMax clamp the hedge delay, which is HedgeFactor times
	// the node's recent latency.
	HedgeMin, HedgeMax time.Duration
	HedgeFactor        float64
	// HedgeBudget is the fraction of sub-requests that may be hedged, on top
	// of a burst of BudgetBurst.
	HedgeBudget float64
	// RetryBudget is the fraction of sub-requests that may be retried.
	RetryBudget float64
	// BudgetBurst is the initial and maximum spare tokens of each budget.
	BudgetBurst int

	// StallAfter ejects a node that has requests outstanding and has
	// answered nothing for this long: a hung node. The watchdog looks
	// every quarter of it and ejects a node found so at looks that far apart.
	StallAfter time.Duration
	// FailFastAfter is how long a node must be silent that way before a
	// call gives up on it without sending: a write to its primary, or a
	// read with no other node left. It is longer than StallAfter because a
	// false alarm here costs a failed call, not just a hedge: on a busy
	// machine a healthy node can be silent for StallAfter.
	FailFastAfter time.Duration
	// ProbeInterval is how often ejected nodes are probed; ReadmitAfter
	// consecutive successful probes re-admit a node.
	ProbeInterval time.Duration
	ReadmitAfter  int
	// MaxEjectedFraction caps the fraction of nodes ejected at once.
	MaxEjectedFraction float64

	// ReplicaCheckInterval is how often every node is asked for INFO
	// replication (each ask bounded by the interval too). A replica whose
	// last acknowledgement to its primary is older than MaxReplicaLag, or
	// that its primary does not list in step, serves no reads until it
	// catches up (one whose link is down acknowledges nothing). Redis
	// reports the lag in whole seconds and a healthy replica acknowledges
	// every second, so MaxReplicaLag is at least 1 s.
	ReplicaCheckInterval time.Duration
	MaxReplicaLag        time.Duration

	// MemoryCheckInterval is how often every node is asked for INFO memory
	// and INFO stats (memory.go): room, eviction policy, evicted keys; and
	// for its clock (skew.go).
	MemoryCheckInterval time.Duration

	// Rights are the commands Apollo's user must be allowed to run
	// (redisstore.Rights, set by the app). Every RightsCheckInterval each
	// node of the slot map is asked which it denies (rights.go): an ACL
	// narrowed while Apollo runs is exported, logged and alerted on. None:
	// not checked.
	Rights              []Right
	RightsCheckInterval time.Duration

	// MigrationGrace is how long reads go to primaries after a MOVED or ASK
	// reply: replicas cannot see a slot migration and may answer "missing"
	// for keys that already moved.
	MigrationGrace time.Duration

	// PrimaryFallbackRate caps, per primary, the read commands per second
	// that fall back to it from replicas, so a failing replica cannot move
	// unbounded load onto its primary. Burst is a tenth of it. 0 = no cap.
	PrimaryFallbackRate int

	// Wall is this process's clock; nil is time.Now. The router reads it
	// once, at its start, and keeps the cluster's time (Now) on it moved on
	// monotonically; ClusterOffset and the exported clock offsets are
	// against it. A test or a drill gives an instance a clock that is off
	// with it. (Contexts' deadlines stay on time.Now; ClockOffset accounts
	// for the difference.)
	Wall func() time.Time
}

// wall is Wall, or time.Now.
func (c Config) wall() time.Time {
	if c.Wall == nil {
		return time.Now()
	}
	return c.Wall()
}

// DefaultConfig returns the defaults used by apollo serve.
func DefaultConfig() Config {
	return Config{
		Policy:               ReplicaPreferred,
		DialTimeout:          250 * time.Millisecond,
		ReadTimeout:          time.Second,
		CallTimeout:          time.Second,
		AckTimeout:           250 * time.Millisecond,
		PoolSize:             32,
		CoalesceAfter:        1,
		RefreshInterval:      5 * time.Second,
		RefreshMinInterval:   200 * time.Millisecond,
		HedgeMin:             5 * time.Millisecond,
		HedgeMax:             40 * time.Millisecond,
		HedgeFactor:          4,
		HedgeBudget:          0.1,
		RetryBudget:          0.2,
		BudgetBurst:          500,
		StallAfter:           80 * time.Millisecond,
		FailFastAfter:        500 * time.Millisecond,
		ProbeInterval:        100 * time.Millisecond,
		ReadmitAfter:         3,
		MaxEjectedFraction:   0.34,
		ReplicaCheckInterval: 500 * time.Millisecond,
		MaxReplicaLag:        2 * time.Second,
		MemoryCheckInterval:  5 * time.Second,
		RightsCheckInterval:  30 * time.Second,
		PrimaryFallbackRate:  50000,
		MigrationGrace:       10 * time.Second,
	}
}

// Flags holds the flag-only settings that become Config fields after parsing.
type Flags struct {
	addrs          string
	passwordFile   string
	tlsOn          bool
	tlsCA          string
	tlsCert        string
	tlsKey         string
	tlsServerName  string
	tlsInsecureDev bool
	sourceAddr     string
}

// RegisterFlags registers the router's flags on fs with c's values as
// defaults. Call Flags.Apply(c) after parsing.
func (c *Config) RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{addrs: strings.Join(c.Addrs, ",")}
	fs.StringVar(&f.addrs, "redis-addrs", f.addrs, "comma-separated seed addresses of the Redis Cluster (host:port)")
	fs.StringVar(&c.Username, "redis-user", c.Username, "Redis ACL user name")
	fs.StringVar(&c.Password, "redis-password", c.Password, "Redis password (prefer --redis-password-file or APOLLO_REDIS_PASSWORD: a flag is on the command line for every local user to read)")
	fs.StringVar(&f.passwordFile, "redis-password-file", "", "file holding the Redis password (a mounted secret); white space around it is ignored. Read again for every new connection: a rotated password is used from the next connection on, without a restart (add the new password to the Redis user, rewrite the file, then remove the old one)")
	fs.Var(&c.Policy, "read-policy", "where reads go: "+policyList())
	fs.StringVar(&f.sourceAddr, "redis-source-addr", "", "local IP address to connect to Redis from (default: the system's choice); on a host with several addresses, the one Redis ACLs and firewalls expect")
	fs.BoolVar(&f.tlsOn, "redis-tls", false, "connect to Redis over TLS")
	fs.StringVar(&f.tlsCA, "redis-tls-ca", "", "PEM file of the CA that signed the Redis certificates (default: system roots)")
	fs.StringVar(&f.tlsCert, "redis-tls-cert", "", "PEM file of the client certificate to present to Redis (tls-auth-clients yes); with --redis-tls-key. Read again for every new connection: a certificate renewed on disk is presented from the next connection on")
	fs.StringVar(&f.tlsKey, "redis-tls-key", "", "PEM file of the client certificate's private key (see --redis-tls-cert)")
	fs.StringVar(&f.tlsServerName, "redis-tls-server-name", "", "server name to verify in Redis certificates")
	fs.BoolVar(&f.tlsInsecureDev, "redis-tls-insecure-skip-verify", false, "do not verify Redis certificates (development only)")
	fs.DurationVar(&c.CallTimeout, "redis-call-timeout", c.CallTimeout, "deadline of a Redis call when the request has none")
	fs.DurationVar(&c.ReadTimeout, "redis-read-timeout", c.ReadTimeout, "socket read timeout per node")
	fs.IntVar(&c.PoolSize, "redis-pool-size", c.PoolSize, "connections per Redis node")
	fs.IntVar(&c.CoalesceAfter, "redis-coalesce-after", c.CoalesceAfter, "plain-read pipelines in flight to one node before further plain reads to it queue and go out merged in one (0 = never merge)")
	fs.DurationVar(&c.HedgeMax, "redis-hedge-max", c.HedgeMax, "longest wait before a read is hedged to another node")
	fs.Float64Var(&c.HedgeBudget, "redis-hedge-budget", c.HedgeBudget, "fraction of requests that may be hedged")
	fs.DurationVar(&c.StallAfter, "redis-stall-after", c.StallAfter, "eject a node that answers nothing for this long while requests wait; at most half the 250 ms a write waits for replica acknowledgements, since a write's proof asks a lagging replica several times within it")
	fs.DurationVar(&c.FailFastAfter, "redis-fail-fast-after", c.FailFastAfter, "fail a call at once, without sending it, when its only possible node has answered nothing for this long")
	fs.DurationVar(&c.MaxReplicaLag, "redis-max-replica-lag", c.MaxReplicaLag, "a replica whose last acknowledgement to its primary is older than this (or that its primary does not list in step) serves no reads until it catches up")
	fs.IntVar(&c.PrimaryFallbackRate, "redis-primary-fallback-rate", c.PrimaryFallbackRate, "max reads/s per primary falling back from replicas (0 = no cap)")
	return f
}

// Apply copies the parsed flag-only settings into c.
func (f *Flags) Apply(c *Config) error {
	c.Addrs = nil
	for _, a := range strings.Split(f.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.Addrs = append(c.Addrs, a)
		}
	}
	if f.passwordFile != "" {
		if c.Password != "" {
			return errors.New("give the Redis password once: --redis-password-file, or --redis-password / APOLLO_REDIS_PASSWORD")
		}
		pw, err := secret.ReadFile(f.passwordFile)
		if err != nil {
			return fmt.Errorf("--redis-password-file: %w", err)
		}
		c.Password, c.PasswordFile = pw, f.passwordFile
	}
	if f.sourceAddr != "" {
		a, err := netip.ParseAddr(f.sourceAddr)
		if err != nil {
			return fmt.Errorf("--redis-source-addr %q is not an IP address", f.sourceAddr)
		}
		c.SourceAddr = a
	}
	if !f.tlsOn {
		// A TLS setting without TLS is a TLS deployment missing its switch:
		// connecting in the clear would be the wrong way to find out.
		if f.tlsCert != "" || f.tlsKey != "" || f.tlsCA != "" || f.tlsServerName != "" || f.tlsInsecureDev {
			return errors.New("--redis-tls-ca, --redis-tls-cert, --redis-tls-key, --redis-tls-server-name and --redis-tls-insecure-skip-verify need --redis-tls")
		}
		return nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.tlsServerName, InsecureSkipVerify: f.tlsInsecureDev}
	if f.tlsCA != "" {
		pem, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return fmt.Errorf("read --redis-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--redis-tls-ca %s holds no PEM certificate", f.tlsCA)
		}
		t.RootCAs = pool
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("give the client certificate and its key together: --redis-tls-cert and --redis-tls-key")
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return fmt.Errorf("--redis-tls-cert, --redis-tls-key: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
		c.TLSCertFile, c.TLSKeyFile = f.tlsCert, f.tlsKey
	}
	c.TLS = t
	return nil
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") || c.TLSCertFile != "" && c.TLS == nil {
		errs = append(errs, errors.New("a TLS client certificate needs its key and TLS (--redis-tls-cert, --redis-tls-key, --redis-tls)"))
	}
	if len(c.Addrs) == 0 {
		errs = append(errs, errors.New("at least one Redis seed address is needed (--redis-addrs)"))
	}
	for _, a := range c.Addrs {
		if i := strings.LastIndexByte(a, ':'); i <= 0 || i == len(a)-1 {
			errs = append(errs, fmt.Errorf("redis address %q must be host:port", a))
		}
	}
	if _, err := ParsePolicy(string(c.Policy)); err != nil {
		errs = append(errs, err)
	}
	positive := map[string]time.Duration{
		"dial timeout": c.DialTimeout, "read timeout": c.ReadTimeout, "call timeout": c.CallTimeout,
		"refresh interval": c.RefreshInterval, "refresh min interval": c.RefreshMinInterval,
		"ack timeout": c.AckTimeout, "hedge min": c.HedgeMin, "hedge max": c.HedgeMax, "stall after": c.StallAfter, "fail fast after": c.FailFastAfter, "probe interval": c.ProbeInterval,
		"replica check interval": c.ReplicaCheckInterval, "memory check interval": c.MemoryCheckInterval,
		"rights check interval": c.RightsCheckInterval,
	}
	for name, d := range positive {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	if c.AckTimeout > 0 && 2*c.StallAfter > c.AckTimeout {
		// A write's proof asks a lagging replica again, each ask allowed
		// StallAfter, within AckTimeout (proof.go): it needs room for a few.
		errs = append(errs, fmt.Errorf("stall after %s is more than half the ack timeout %s", c.StallAfter, c.AckTimeout))
	}
	if c.FailFastAfter < c.StallAfter {
		errs = append(errs, fmt.Errorf("fail fast after %s is shorter than stall after %s", c.FailFastAfter, c.StallAfter))
	}
	if c.MaxReplicaLag < time.Second {
		errs = append(errs, fmt.Errorf("max replica lag must be at least 1s (Redis reports lag in whole seconds; a healthy replica reports up to 1), got %s", c.MaxReplicaLag))
	}
	if c.HedgeMin > c.HedgeMax {
		errs = append(errs, fmt.Errorf("hedge min %s exceeds hedge max %s", c.HedgeMin, c.HedgeMax))
	}
	if c.PoolSize < 1 {
		errs = append(errs, fmt.Errorf("pool size must be at least 1, got %d", c.PoolSize))
	}
	if c.CoalesceAfter < 0 {
		errs = append(errs, fmt.Errorf("coalesce after must be 0 (off) or more, got %d", c.CoalesceAfter))
	}
	for name, f := range map[string]float64{"hedge budget": c.HedgeBudget, "retry budget": c.RetryBudget, "max ejected fraction": c.MaxEjectedFraction} {
		if f < 0 || f > 1 {
			errs = append(errs, fmt.Errorf("%s must be within [0, 1], got %g", name, f))
		}
	}
	if c.HedgeFactor < 1 {
		errs = append(errs, fmt.Errorf("hedge factor must be at least 1, got %g", c.HedgeFactor))
	}
	if c.ReadmitAfter < 1 {
		errs = append(errs, fmt.Errorf("readmit after must be at least 1, got %d", c.ReadmitAfter))
	}
	if c.MigrationGrace < 0 {
		errs = append(errs, fmt.Errorf("migration grace must not be negative, got %s", c.MigrationGrace))
	}
	if c.BudgetBurst < 0 || c.PrimaryFallbackRate < 0 {
		errs = append(errs, errors.New("budget burst and primary fallback rate must not be negative"))
	}
	return errors.Join(errs...)
}
