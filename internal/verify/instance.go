package verify

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Instance is one `apollo serve` process under test: started from a
// binary (so that a new verify can check an older build), killed with
// SIGKILL by its PID, and restarted on the same ports.
type Instance struct {
	Name string
	// RedisSource is the address its Redis connections come from
	// (--redis-source-addr); "" when the build has no such flag.
	RedisSource string
	bin         string
	args        []string
	// extra are flags added to args from the next Start on (a fault's).
	extra []string
	logs  *logPipe // its stderr, which instance-log-stall stops reading

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has been waited for
	api      string        // http://host:port of the public API
	admin    string        // http://host:port of the admin listener
	apiAddr  string
	adminAdr string
}

// servingLine is what `apollo serve` prints once it listens.
var servingLine = regexp.MustCompile(`apollo serving API on (http://\S+), admin on (http://\S+)`)

// NewInstance describes an instance; Start runs it. args are `serve`
// flags (the Redis seeds and settings); logs go to logw.
func NewInstance(name, bin string, args []string, logw io.Writer) *Instance {
	return &Instance{Name: name, bin: bin, args: args, logs: newLogPipe(logw),
		apiAddr: "127.0.0.1:0", adminAdr: "127.0.0.1:0"}
}

// API and Admin are the instance's base URLs (stable across restarts).
func (in *Instance) API() string   { in.mu.Lock(); defer in.mu.Unlock(); return in.api }
func (in *Instance) Admin() string { in.mu.Lock(); defer in.mu.Unlock(); return in.admin }

// Start runs the process and returns once it serves.
func (in *Instance) Start(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	args := append([]string{"serve", "--listen", in.apiAddr, "--admin-listen", in.adminAdr, "--drain-delay", "0s"}, in.args...)
	args = append(args, in.extra...)
	cmd := exec.Command(in.bin, args...)
	stderr, err := in.logs.pipe()
	if err != nil {
		return err
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		stderr.Close()
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	stderr.Close() // the process has its own copy
	if err != nil {
		return fmt.Errorf("start %s: %w", in.Name, err)
	}
	done := make(chan struct{})
	lines := make(chan []string, 1)
	go func() { // owned by the process: ends when its stdout closes
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case lines <- m:
				default:
				}
			}
		}
		cmd.Wait()
		close(done)
	}()
	in.cmd, in.done = cmd, done
	select {
	case m := <-lines:
		in.api, in.admin = m[1], m[2]
		// Restarts reuse the ports, so the URLs stay valid.
		in.apiAddr, in.adminAdr = m[1][len("http://"):], m[2][len("http://"):]
		return nil
	case <-done:
		return fmt.Errorf("%s exited before serving (see its log)", in.Name)
	case <-ctx.Done():
		in.killLocked()
		return ctx.Err()
	case <-time.After(30 * time.Second):
		in.killLocked()
		return fmt.Errorf("%s did not serve within 30s", in.Name)
	}
}

// Kill ends the process with SIGKILL (a crash: nothing is flushed or
// drained) and waits for it.
func (in *Instance) Kill() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.killLocked()
}

func (in *Instance) killLocked() error {
	if in.cmd == nil || in.cmd.Process == nil {
		return nil
	}
	err := in.cmd.Process.Signal(syscall.SIGKILL)
	<-in.done
	in.cmd = nil
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Pause stops the process where it is (SIGSTOP), as a long GC pause, a
// VM frozen for migration or a debugger would: its leases and claims run
// out while it holds them, requests sent to it wait in its sockets, and
// when it is resumed (SIGCONT) it carries on from what it believed
// before the pause.
func (in *Instance) Pause() error { return in.signal(syscall.SIGSTOP) }

// Resume continues a paused process.
func (in *Instance) Resume() error { return in.signal(syscall.SIGCONT) }

func (in *Instance) signal(sig syscall.Signal) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil || in.cmd.Process == nil {
		return fmt.Errorf("%s is not running", in.Name)
	}
	return in.cmd.Process.Signal(sig)
}

// Stop asks the process to shut down (SIGTERM), then kills it after 10 s.
// A paused process is continued, or it would not hear the SIGTERM.
func (in *Instance) Stop() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return nil
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	_ = in.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-in.done:
		in.cmd = nil
		return nil
	case <-time.After(10 * time.Second):
		return in.killLocked()
	}
}

// Restart stops the process as a deployment would (SIGTERM) and starts it
// again with extra flags (none: as first started).
func (in *Instance) Restart(ctx context.Context, extra ...string) error {
	if err := in.Stop(); err != nil {
		return err
	}
	in.mu.Lock()
	in.extra = extra
	in.mu.Unlock()
	return in.Start(ctx)
}

// StallLog stops reading the process's stderr (the instance-log-stall
// fault), and ResumeLog reads it again; restarts keep the stall.
func (in *Instance) StallLog() error  { return in.logs.Stall() }
func (in *Instance) ResumeLog() error { return in.logs.Resume() }

// Running reports whether the process is up.
func (in *Instance) Running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cmd != nil
}
