package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// An instance whose stderr nobody reads (a log collector that stopped, a
// container runtime's full log buffer) keeps answering every request:
// the log lines it cannot write are dropped and counted, and once the
// output is read again it says how many it dropped. Before, every
// request's access-log line waited for the pipe, and so did its answer.
func TestServeKeepsAnsweringWhileItsLogOutputIsNotRead(t *testing.T) {
	c := clustertest.Start(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// Whatever happens, the pipe is drained before serve is waited for:
	// a build that blocks on it could not shut down otherwise.
	read := make(chan string, 1)
	drain := sync.OnceFunc(func() {
		go func() {
			b, _ := io.ReadAll(r)
			read <- string(b)
		}()
	})
	ctx, cancel := context.WithCancel(context.Background())
	var out, ignored syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--redis-addrs", c.Addrs()[0], "--listen", "127.0.0.1:0",
			"--admin-listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0", "--drain-delay", "0s"}, &out, w)
	}()
	stopped := sync.OnceFunc(func() { drain(); cancel(); <-done })
	defer stopped()
	api, admin, _ := waitServing(t, &out, &ignored, done)

	// Far more access-log lines than a pipe (64 KiB) and the log output's
	// buffer (1 MiB) hold: about 250 bytes each.
	client := &http.Client{Timeout: 10 * time.Second} // a hang, not a speed
	const workers, each = 8, 800
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for k := range workers {
		wg.Go(func() {
			for i := range each {
				if err := putLocation(client, fmt.Sprintf("%s/v1/drivers/stall-%d/location", api, k)); err != nil {
					errs <- fmt.Errorf("request %d of %d from client %d with the log output unread: %w", i+1, each, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	dropped := metric(t, admin, "apollo_log_lines_dropped_total")
	if dropped == 0 {
		t.Fatalf("apollo_log_lines_dropped_total = 0 after %d requests with the log output unread", workers*each)
	}

	// Read again, then stop: the output says what it lost.
	stopped()
	w.Close()
	logs := <-read
	notes := regexp.MustCompile(`"msg":"log lines dropped while the log output was blocked","lines":(\d+)`).FindAllStringSubmatch(logs, -1)
	if len(notes) == 0 {
		t.Fatalf("no line says log lines were dropped; the log read again ends:\n%s", tail(logs, 2000))
	}
	said := 0.0
	for _, m := range notes {
		n, _ := strconv.ParseFloat(m[1], 64)
		said += n
	}
	if said < dropped {
		t.Errorf("the notes say %v lines were dropped, the counter said %v before", said, dropped)
	}
	if !strings.Contains(logs, `"msg":"apollo stopped"`) {
		t.Errorf("the last line logged before serve returned was not written; the log read again ends:\n%s", tail(logs, 1000))
	}
}

// putLocation sends one heartbeat and wants 200.
func putLocation(client *http.Client, url string) error {
	req, _ := http.NewRequest("PUT", url, strings.NewReader(`{"lat":1.3,"lng":103.8}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d, want 200", resp.StatusCode)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// A serve that cannot start ends even when its stderr is full and nobody
// reads it: its log lines are dropped and its last line given up on
// after a while, where before it waited on the pipe for ever.
func TestServeThatCannotStartExitsWhileItsStderrIsFull(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// Fill the pipe: a write that would wait fails at once instead.
	if err := w.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := w.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	w.SetWriteDeadline(time.Time{})
	done := make(chan int, 1)
	go func() {
		var out syncBuffer
		done <- Run(context.Background(), []string{"serve", "--redis-addrs", "127.0.0.1:1", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, &out, w)
	}()
	select {
	case code := <-done:
		if code == 0 {
			t.Errorf("serve with no Redis to reach exited %d", code)
		}
	case <-time.After(time.Minute): // a hang, not a speed
		go io.Copy(io.Discard, r) // let it go
		<-done
		t.Fatal("serve did not exit while its stderr was full, only once it was read")
	}
	go io.Copy(io.Discard, r) // the last line, given up on, may still be waiting
}
