package verify

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// logPipe is an instance's stderr: a pipe verify reads into the run's
// log, and can stop reading, as a log collector that stopped or a
// container runtime's full log buffer does (the instance-log-stall
// fault). A process that waits for its log output then waits for ever;
// one that does not drops lines.
type logPipe struct {
	w io.Writer // the run's log

	mu      sync.Mutex
	stalled bool
	resumed *sync.Cond
	r       *os.File // the read end of the current process's pipe
}

func newLogPipe(w io.Writer) *logPipe {
	lp := &logPipe{w: w}
	lp.resumed = sync.NewCond(&lp.mu)
	return lp
}

// stalledPipeSize is the pipe's capacity while it is not read: a page,
// the least Linux allows, so that a process blocks on it after a few
// dozen lines rather than after 64 KiB (minutes of a quiet instance).
const stalledPipeSize = 4096

// pipe makes a new pipe for a process starting and reads it until the
// process and every copy of its write end have closed it; the caller
// gives the write end to the process and closes its own.
func (lp *logPipe) pipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	lp.mu.Lock()
	lp.r = r
	lp.mu.Unlock()
	go lp.copy(r) // owned by the pipe: ends at its EOF
	return w, nil
}

func (lp *logPipe) copy(r *os.File) {
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		lp.mu.Lock()
		for lp.stalled {
			lp.resumed.Wait()
		}
		lp.mu.Unlock()
		n, err := r.Read(buf)
		if n > 0 {
			lp.w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Stall stops reading the pipe, after making it as small as Linux allows
// (best effort: shrinking fails, EBUSY, while the pipe holds more than
// the new size, and then the stall is as large as the pipe, which fills
// all the same, later).
func (lp *logPipe) Stall() error {
	lp.mu.Lock()
	r := lp.r
	lp.mu.Unlock()
	if r == nil {
		return fmt.Errorf("no process has started")
	}
	for range 20 {
		if setPipeSize(r, stalledPipeSize) == nil {
			break
		}
		time.Sleep(5 * time.Millisecond) // while the pipe is read down
	}
	lp.mu.Lock()
	lp.stalled = true
	lp.mu.Unlock()
	return nil
}

// Resume reads the pipe again, at its usual size.
func (lp *logPipe) Resume() error {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.stalled = false
	lp.resumed.Broadcast()
	if lp.r != nil {
		_ = setPipeSize(lp.r, 64<<10) // best effort, as in Stall; a closed pipe has no size
	}
	return nil
}

func setPipeSize(f *os.File, size int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		_, serr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
	}); err != nil {
		return err
	}
	return serr
}
