package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// wrkScript makes wrk send POST /v1/drivers/batch-get of 20 random drivers
// of bench-0000 … bench-<ids-1> (its argument), then print the run as one
// JSON line. Failed calls are wrk's own count: answers other than 2xx or
// 3xx, socket errors and timeouts. No response() hook: with one, wrk
// would copy every answer into Lua, a cost the client alone would pay.
const wrkScript = `
local threads, ids = {}, 0
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args)
  ids = tonumber(args[1])
  math.randomseed(os.time() * 100 + tid)
end
function request()
  local t = {}
  for i = 1, 20 do t[i] = string.format('"bench-%04d"', math.random(0, ids - 1)) end
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, '{"ids":[' .. table.concat(t, ",") .. ']}')
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"Calls":%d,"Failed":%d,"Seconds":%.6f}\n', summary.requests,
    e.status + e.connect + e.read + e.write + e.timeout, summary.duration / 1e6))
end
`

// wrkThreads is wrk's threads: one per core of this machine's two, as a
// C load generator would be run beside a server on the same host.
const wrkThreads = 2

// runWrk is runLoadgen with wrk, a load generator written in C, as the
// client: it costs the machine far less per call than Go's net/http
// client, so the HTTP row measures the server rather than its client. Its
// CPU is its process's, from the kernel's accounting of the child. wrk
// runs for a time, not a number of calls (it waits out its duration even
// when its threads stop early), so spec.Calls is ignored and the caller
// reports the calls made.
func runWrk(b *testing.B, wrk string, d time.Duration, spec loadgenSpec) loadgenResult {
	b.Helper()
	script := filepath.Join(b.TempDir(), "batch.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	name, args := loadgenCommand(b, wrk, "-t", strconv.Itoa(wrkThreads), "-c", strconv.Itoa(spec.Workers),
		"-d", strconv.Itoa(int(d.Round(time.Second).Seconds()))+"s", "--timeout", "10s", "-s", script, spec.URL, "--", strconv.Itoa(spec.IDs))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("wrk: %v: %s", err, stderr.String())
	}
	// wrk prints its own summary first; the script's line is the last.
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var res loadgenResult
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil {
		b.Fatalf("wrk said %q: %v", stdout.String(), err)
	}
	res.CPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if res.Failed > 0 {
		res.FirstError = "answers other than 2xx/3xx, socket errors or timeouts (wrk counts them, without detail)"
	}
	return res
}

// wrkDuration is how long the wrk row runs: -benchtime when it is a
// duration, else 10 s (a count of calls, "20000x", cannot be given to wrk).
func wrkDuration() time.Duration {
	if f := flag.Lookup("test.benchtime"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d >= time.Second {
			return d
		}
	}
	return 10 * time.Second
}
