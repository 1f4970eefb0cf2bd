package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/secret"
)

// Exit codes. verify has two of its own, apart from a run that failed
// (1) or was asked wrongly (2), so that a script can tell a bug found in
// Apollo from a run that could not be made.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitViolation = 3 // verify: a check found a violation
	exitUndecided = 4 // verify: a check could not decide, and none failed
)

// env gives a subcommand its input and output.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "serve the driver API against a Redis Cluster", runServe},
		{"dev", "run Apollo locally: cluster + service + simulated fleet", runDev},
		{"drill", "reproduce the 2019 incident and other failures; compare clients", runDrill},
		{"spike", "flood one area with bookings and show what Spampede does for everyone else", runSpike},
		{"check", "inspect a Redis Cluster for the risks of the 2019 incident", runCheck},
		{"capacity", "measure how a fleet of instances shares the background booking work", runCapacity},
		{"verify", "check the guarantees from recorded histories under a nemesis of faults", runVerify},
		{"cluster", "run a throwaway local Redis Cluster (up | status | down)", runCluster},
		{"version", "print the version and build information", runVersion},
	}
}

// Run runs the subcommand named by args[0] and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// go-redis logs dial failures through a process-wide logger, one line per
	// attempt; during a drill that is thousands of lines about a node we
	// killed on purpose. Apollo's router logs ejections and exports metrics
	// instead, so go-redis's own lines are dropped.
	redis.SetLogger(quietRedisLog{})
	e := env{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return Run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		return exitCode(err, stderr)
	}
	fmt.Fprintf(stderr, "apollo: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		lastLine(stderr, err)
		return exitUsage
	default:
		var se silentExit
		if errors.As(err, &se) {
			return se.code
		}
		var ec exitCodeError
		if errors.As(err, &ec) {
			lastLine(stderr, err)
			return ec.code
		}
		lastLine(stderr, err)
		return exitFailure
	}
}

// lastLine writes a command's error as it exits, waiting at most
// stderrWait: a process must end even when nobody reads its stderr (its
// log lines are past by then: logsink). The write left waiting, if any,
// ends with the process.
func lastLine(stderr io.Writer, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fmt.Fprintf(stderr, "apollo: %v\n", err)
	}()
	t := time.NewTimer(stderrWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// stderrWait bounds how long a process that ends waits for stderr, for
// its queued log lines and then for its last line: a pipe nobody reads
// must not keep it.
const stderrWait = 2 * time.Second

func usage(w io.Writer) {
	fmt.Fprintln(w, "Apollo: driver availability and booking admission on Redis Cluster.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: apollo <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help       show help for a command: apollo help <command>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every flag can also be set in the environment as APOLLO_<FLAG>, for example")
	fmt.Fprintln(w, "--node-timeout as APOLLO_NODE_TIMEOUT. A flag on the command line wins.")
}

// usageError is a problem with how the command was invoked (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// silentExit is an exit code whose reason was already printed.
type silentExit struct{ code int }

func (s silentExit) Error() string { return fmt.Sprintf("exit status %d", s.code) }

// exitCodeError carries a specific exit code (for checks: 1 warning, 2 critical).
type exitCodeError struct {
	code int
	err  error
}

func (x exitCodeError) Error() string { return x.err.Error() }
func (x exitCodeError) Unwrap() error { return x.err }

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(e env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: apollo %s\n\n%s\n\nFlags (each also read from APOLLO_<FLAG> when not given):\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, then fills every flag not given on the command
// line from the environment variable APOLLO_<NAME> (dashes as underscores).
func parseFlags(e env, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		key := envName(f.Name)
		if v := e.getenv(key); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				shown := strconv.Quote(v)
				if slices.Contains(app.SecretFlags(), f.Name) {
					shown = secret.Redacted
				}
				errs = append(errs, fmt.Errorf("%s=%s: %w", key, shown, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	return nil
}

func envName(flagName string) string {
	return "APOLLO_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
