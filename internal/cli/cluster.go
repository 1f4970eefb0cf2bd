package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

const clusterSynopsis = `cluster up      start a local Redis Cluster in the foreground; Ctrl-C stops it
        cluster status  show the state of the cluster started by "cluster up"
        cluster down    stop the cluster started by "cluster up" (from another terminal)`

func runCluster(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("cluster needs a subcommand: up, status or down")}
	}
	switch args[0] {
	case "up":
		return runClusterUp(ctx, e, args[1:])
	case "status":
		return runClusterStatus(ctx, e, args[1:])
	case "down":
		return runClusterDown(ctx, e, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintf(e.stderr, "Usage: apollo %s\n", clusterSynopsis)
		return nil
	}
	return usageError{fmt.Errorf("unknown cluster subcommand %q (want up, status or down)", args[0])}
}

// clusterState is what "cluster up" writes so that status and down can find it.
type clusterState struct {
	PID   int                     `json:"pid"`
	Dir   string                  `json:"dir"`
	Seed  string                  `json:"seed"`
	Nodes []localcluster.NodeInfo `json:"nodes"`
}

func defaultStateFile() string { return filepath.Join(os.TempDir(), "apollo-cluster.json") }

func runClusterUp(ctx context.Context, e env, args []string) error {
	cfg := localcluster.DefaultConfig()
	fs := newFlagSet(e, "cluster up", "Start a throwaway Redis Cluster of real redis-server processes on free\nloopback ports and keep it running until Ctrl-C (or `apollo cluster down`).")
	cfg.RegisterFlags(fs)
	stateFile := fs.String("state-file", defaultStateFile(), "where to write the cluster's nodes as JSON")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	fmt.Fprintf(e.stdout, "starting %d redis-server processes (%d primaries × %d replicas)...\n",
		cfg.Primaries*(1+cfg.Replicas), cfg.Primaries, cfg.Replicas)
	start := time.Now()
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	infos, err := c.Info(ctx)
	if err != nil {
		return err
	}
	st := clusterState{PID: os.Getpid(), Dir: c.Dir(), Seed: c.Addrs()[0], Nodes: infos}
	if err := writeJSONFile(*stateFile, st); err != nil {
		return err
	}
	defer os.Remove(*stateFile)
	fmt.Fprintf(e.stdout, "cluster ready in %s (dir %s)\n\n", time.Since(start).Round(time.Millisecond), c.Dir())
	printNodes(e, infos)
	port := st.Seed[strings.LastIndexByte(st.Seed, ':')+1:]
	fmt.Fprintf(e.stdout, "\nseed: %s\nstate file: %s\ntry:  redis-cli -c -p %s cluster info\nstop: Ctrl-C, or apollo cluster down\n", st.Seed, *stateFile, port)
	<-ctx.Done()
	fmt.Fprintln(e.stdout, "stopping the cluster...")
	if err := c.Close(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "stopped; every process and directory removed")
	return nil
}

func printNodes(e env, infos []localcluster.NodeInfo) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDR\tROLE\tSHARD\tPRIMARY\tPID\tFLAGS")
	for _, in := range infos {
		primary := in.PrimaryAddr
		if primary == "" {
			primary = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", in.Addr, in.Role, in.Shard, primary, in.PID, strings.Join(in.Flags, ","))
	}
	tw.Flush()
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return localcluster.ReplaceFile(path, append(b, '\n'), 0o644)
}

func readClusterState(path string) (clusterState, error) {
	var st clusterState
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("no cluster state at %s: is `apollo cluster up` running? (or pass --state-file)", path)
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	return st, nil
}

func runClusterStatus(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "cluster status", "Show each node of the cluster started by `apollo cluster up`, as the cluster sees it now.")
	stateFile := fs.String("state-file", defaultStateFile(), "the state file written by cluster up")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	st, err := readClusterState(*stateFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, n := range st.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err1 := cl.ClusterInfo(ctx).Result()
		nodes, err2 := cl.ClusterNodes(ctx).Result()
		cl.Close()
		if err := errors.Join(err1, err2); err != nil {
			fmt.Fprintf(e.stdout, "%s: unreachable: %v\n", n.Addr, err)
			continue
		}
		state := "unknown"
		for _, l := range strings.Split(info, "\n") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(l), "cluster_state:"); ok {
				state = s
			}
		}
		fmt.Fprintf(e.stdout, "cluster_state:%s (as seen by %s)\n\n%s", state, n.Addr, nodes)
		return nil
	}
	return errors.New("no node of the cluster answered")
}

func runClusterDown(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "cluster down", "Stop the cluster started by `apollo cluster up`: ask it to shut down\ncleanly, and kill its nodes if its process is gone.")
	stateFile := fs.String("state-file", defaultStateFile(), "the state file written by cluster up")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	st, err := readClusterState(*stateFile)
	if err != nil {
		return err
	}
	if localcluster.ProcessAlive(st.PID) {
		if err := syscall.Kill(st.PID, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal apollo cluster up (pid %d): %w", st.PID, err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for localcluster.ProcessAlive(st.PID) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !localcluster.ProcessAlive(st.PID) {
			fmt.Fprintf(e.stdout, "stopped the cluster (pid %d)\n", st.PID)
			return nil
		}
	}
	// The owner is gone (or stuck): kill its redis-server processes ourselves.
	for _, n := range st.Nodes {
		if isRedisServer(n.PID) {
			_ = syscall.Kill(n.PID, syscall.SIGKILL)
		}
	}
	os.RemoveAll(st.Dir)
	os.Remove(*stateFile)
	fmt.Fprintln(e.stdout, "the owning process was gone; killed its nodes and removed", st.Dir)
	return nil
}

func isRedisServer(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.HasPrefix(string(b), "redis-server")
}
