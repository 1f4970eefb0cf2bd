package app_test

import (
	"flag"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loadgenCPUs puts BenchmarkBatchGet20's load generators on CPUs of their
// own, as a server's benchmark is run: given, each load generator runs
// under `taskset -c` on those CPUs, which must be outside this process's
// (start it under taskset too). `make bench-http` runs this process, and
// the cluster it starts, on every CPU but the last and the load generator
// on the last. Empty: the load generator shares this process's CPUs.
var loadgenCPUs = flag.String("loadgen-cpus", "", "CPUs (as taskset -c takes them) for BenchmarkBatchGet20's load generators, outside this process's; empty: shared")

// loadgenCommand is name with args, run on the load generator's CPUs when
// -loadgen-cpus is given.
func loadgenCommand(b *testing.B, name string, args ...string) (string, []string) {
	b.Helper()
	if *loadgenCPUs == "" {
		return name, args
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		b.Fatalf("-loadgen-cpus needs taskset (util-linux): %v", err)
	}
	return taskset, append([]string{"-c", *loadgenCPUs, name}, args...)
}

// checkLoadgenApart fails the benchmark when -loadgen-cpus shares a CPU with
// this process (the figures would not be what they say), and logs where
// each runs.
func checkLoadgenApart(b *testing.B) {
	b.Helper()
	if *loadgenCPUs == "" {
		b.Log("load generator: on this process's CPUs (-loadgen-cpus not given)")
		return
	}
	want, err := parseCPUList(*loadgenCPUs)
	if err != nil {
		b.Fatalf("-loadgen-cpus: %v", err)
	}
	var own unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		b.Fatalf("this process's CPUs: %v", err)
	}
	var mine []int
	for cpu := range cpuSetSize {
		if own.IsSet(cpu) {
			mine = append(mine, cpu)
		}
	}
	for _, cpu := range want {
		if own.IsSet(cpu) {
			b.Fatalf("-loadgen-cpus %s shares CPU %d with this process (CPUs %v): run it under taskset on the others", *loadgenCPUs, cpu, mine)
		}
	}
	b.Logf("load generator: CPUs %v; this process and its cluster: CPUs %v", want, mine)
}

// cpuSetSize is how many CPUs a unix.CPUSet can name.
const cpuSetSize = 8 * int(unsafe.Sizeof(unix.CPUSet{}))

// parseCPUList reads a CPU list as taskset -c takes it: "1", "2-3", "0,2-3".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		if err != nil || first < 0 || last < first || last >= cpuSetSize {
			return nil, fmt.Errorf("%q is not a CPU list such as 1, 2-3 or 0,2-3", s)
		}
		for cpu := first; cpu <= last; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"1", []int{1}},
		{"2-3", []int{2, 3}},
		{"0,2-3", []int{0, 2, 3}},
		{"", nil},
		{"a", nil},
		{"3-2", nil},
		{"-1", nil},
		{"1,", nil},
	} {
		got, err := parseCPUList(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parseCPUList(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
