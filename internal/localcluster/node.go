package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProcState is what this package last did to a node's process.
type ProcState string

// Process states.
const (
	Running ProcState = "running"
	Paused  ProcState = "paused"  // SIGSTOP: accepts TCP connections, answers nothing
	Stopped ProcState = "stopped" // killed, or exited on its own
)

// Node is one redis-server process of a local cluster.
type Node struct {
	// Index is the node's position in the cluster: primaries first, then
	// the replicas of shard 0, shard 1, ...
	Index int
	// Shard is the shard the node was created in. After a failover the
	// node may have changed role but stays in its shard.
	Shard int
	// Addr is host:port for clients.
	Addr string
	// BusPort is the cluster bus port.
	BusPort int
	// Dir holds redis.conf, nodes.conf, the log and any persistence files.
	Dir string

	bin  string
	conf string
	opts *redis.Options

	mu    sync.Mutex
	id    string
	cmd   *exec.Cmd
	state ProcState
	// persist is set while FailPersistence's fault is on, busy while
	// Busy's, filled while FillClients's.
	persist *persistFault
	busy    *busyFault
	filled  *fillFault
}

// ID is the node's cluster node id.
func (n *Node) ID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

// PID is the process id, or 0 when the node is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.state == Stopped {
		return 0
	}
	return n.cmd.Process.Pid
}

// State is what this package last did to the node's process.
func (n *Node) State() ProcState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// Client returns a new single-node client for the node; the caller closes it.
// It uses short timeouts so that a hung node fails calls quickly.
func (n *Node) Client() *redis.Client { return n.clientReading(n.opts.ReadTimeout) }

// clientReading is Client waiting d for a reply (-1: for ever).
func (n *Node) clientReading(d time.Duration) *redis.Client {
	o := *n.opts
	o.Addr, o.ReadTimeout = n.Addr, d
	return redis.NewClient(&o)
}

// Info returns one section of the node's INFO, over a client of its own
// that is closed before it returns.
func (n *Node) Info(ctx context.Context, section string) (string, error) {
	cl := n.Client()
	defer cl.Close()
	return cl.Info(ctx, section).Result()
}

func (n *Node) writeConfig(c Config, t *tlsFiles) error {
	lines := []string{
		"bind " + n.host(),
		"bind-source-addr " + n.host(),
		"cluster-enabled yes",
		"cluster-port " + strconv.Itoa(n.BusPort),
		"cluster-config-file nodes.conf",
		"cluster-node-timeout " + strconv.FormatInt(c.NodeTimeout.Milliseconds(), 10),
		"dir " + n.Dir,
		"logfile " + filepath.Join(n.Dir, "redis.log"),
		"daemonize no",
		"enable-debug-command local",
		"repl-diskless-sync yes",
		"repl-diskless-sync-delay 0",
		// Replicas appear in CLUSTER SLOTS only once their replication offset
		// moves; a 1 s replication ping moves it without waiting 10 s.
		"repl-ping-replica-period 1",
		// No replica migration: a replica left to a shard whose primary
		// briefly had none (a failover, then a switchover) stays there, so
		// that every fault heals to the layout the cluster was made with
		// (WaitHealthy). A verify run of every fault ended with one shard
		// holding three replicas and another one, never healthy again.
		// (cluster-allow-replica-migration would say it plainly, but it
		// is Redis 6.2 and later; a barrier no shard reaches works on all.)
		"cluster-migration-barrier 1000",
	}
	if t != nil {
		lines = append(lines, "port 0", "tls-port "+strconv.Itoa(portOf(n.Addr)), "tls-cluster yes", "tls-replication yes",
			"tls-cert-file "+t.cert, "tls-key-file "+t.key, "tls-ca-cert-file "+t.ca, "tls-auth-clients "+map[bool]string{true: "yes", false: "no"}[c.TLSClientAuth])
	} else {
		lines = append(lines, "port "+strconv.Itoa(portOf(n.Addr)))
	}
	lines = append(lines, c.Persistence.directives()...)
	if c.Password != "" {
		lines = append(lines, "requirepass "+c.Password, "masterauth "+c.Password)
	} else {
		lines = append(lines, "protected-mode no")
	}
	if c.User != "" {
		lines = append(lines, "user "+c.User+" on >"+c.Password+" ~* &* +@all", "masteruser "+c.User)
	}
	lines = append(lines, c.ExtraArgs...)
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(n.conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// start launches the process. The child gets SIGKILL if this process dies,
// so a crashed or killed test run cannot leave redis-server behind.
func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	cmd := exec.Command(n.bin, n.conf)
	cmd.Dir = n.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server for %s: %w", n.Addr, err)
	}
	n.cmd = cmd
	n.state = Running
	return nil
}

// waitReady polls PING until the node answers or ctx ends. It reports the
// tail of the node's log when the process exited (for example: port in use).
func (n *Node) waitReady(ctx context.Context) error {
	c := n.Client()
	defer c.Close()
	for {
		err := c.Ping(ctx).Err()
		if err == nil || isNoAuthReady(err) {
			return nil
		}
		if n.exited() {
			return fmt.Errorf("redis-server %s exited: %s", n.Addr, n.logTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server %s did not answer PING: %w", n.Addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func isNoAuthReady(err error) bool {
	// LOADING means the process is up and reading its dataset; fine for "started".
	return strings.HasPrefix(err.Error(), "LOADING")
}

func (n *Node) exited() bool {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		return true
	}
	return !ProcessAlive(cmd.Process.Pid)
}

// ProcessAlive reports whether pid is a live process. It reads /proc
// rather than sending signal 0, which succeeds for a zombie not yet reaped.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z" && f[2] != "X"
}

func (n *Node) logTail() string {
	b, err := os.ReadFile(filepath.Join(n.Dir, "redis.log"))
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// Kill crashes the node with SIGKILL: its connections are refused at once.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killLocked()
}

func (n *Node) killLocked() error {
	if n.cmd == nil || n.state == Stopped {
		return nil
	}
	p := n.cmd.Process
	// A stopped process still dies on SIGKILL; SIGCONT first is harmless and
	// makes the exit immediate on every kernel.
	_ = p.Signal(syscall.SIGKILL)
	_ = p.Signal(syscall.SIGCONT)
	err := n.cmd.Wait()
	n.state = Stopped
	if n.busy != nil {
		// Its script died with it, and a restart has the threshold back.
		n.busy.cl.Close()
		n.busy = nil
	}
	if n.filled != nil {
		// A restart reads maxclients from its config file again.
		_ = n.filled.close()
		n.filled = nil
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return fmt.Errorf("kill %s: %w", n.Addr, err)
	}
	return nil
}

// Pause hangs the node with SIGSTOP: the kernel still accepts TCP
// connections but nothing answers, the hardest failure for a client.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, Paused) }

// Resume ends a Pause with SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, Running) }

func (n *Node) signal(sig syscall.Signal, to ProcState) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.state == Stopped {
		return fmt.Errorf("signal %s: node %s is not running", sig, n.Addr)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s to %s: %w", sig, n.Addr, err)
	}
	n.state = to
	return nil
}

// Restart kills the node if it runs and starts it again on the same port
// with the same nodes.conf, so it rejoins the cluster with its old identity.
// It returns once the node answers PING.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	err := n.killLocked()
	n.mu.Unlock()
	if err != nil {
		return err
	}
	if err := n.start(); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// host is the address the node listens on and connects from.
func (n *Node) host() string { return hostOf(n.Addr) }

func hostOf(addr string) string { return addr[:strings.LastIndexByte(addr, ':')] }

func portOf(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	p, _ := strconv.Atoi(addr[i+1:])
	return p
}
