package redisroute

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeRESP is a TCP server that speaks just enough RESP to pin how
// go-redis reports what a node answers: each command (an array of bulk
// strings) gets the raw reply line its handler returns ("+OK", ":1",
// "$-1", "-WRONGPASS ..."). It is not a Redis: nothing is stored.
type fakeRESP struct {
	ln    net.Listener
	reply func(cmd []string) string
	wg    sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
	seen  []string // command names, in arrival order
}

func startFakeRESP(t *testing.T, reply func(cmd []string) string) *fakeRESP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRESP{ln: ln, reply: reply}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeRESP) addr() string { return f.ln.Addr().String() }

func (f *fakeRESP) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *fakeRESP) serve(c net.Conn) {
	defer f.wg.Done()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, strings.ToUpper(cmd[0]))
		f.mu.Unlock()
		if _, err := io.WriteString(c, f.reply(cmd)+"\r\n"); err != nil {
			return
		}
	}
}

func (f *fakeRESP) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *fakeRESP) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// bulkOrError is the reply line for text: an error line ("-ERR ...") as
// it is, anything else as a bulk string.
func bulkOrError(text string) string {
	if strings.HasPrefix(text, "-") {
		return text
	}
	return fmt.Sprintf("$%d\r\n%s", len(text), text)
}

// probeFakes points every node's probe client at its address, a fakeRESP,
// with the router's probe settings that matter here (RESP2, no retries).
func probeFakes(t *testing.T, c *fakeCluster) {
	for _, n := range c.nodes {
		n.probe = redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true,
			DialTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { n.probe.Close() })
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	n, err := readLen(r, '*')
	if err != nil {
		return nil, err
	}
	cmd := make([]string, n)
	for i := range cmd {
		size, err := readLen(r, '$')
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		cmd[i] = string(buf[:size])
	}
	if len(cmd) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return cmd, nil
}

func readLen(r *bufio.Reader, prefix byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	line = strings.TrimRight(line, "\r\n")
	if len(line) < 2 || line[0] != prefix {
		return 0, fmt.Errorf("want %c, got %q", prefix, line)
	}
	return strconv.Atoi(line[1:])
}
