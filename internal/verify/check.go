package verify

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Codes of the linearizability checks' violations.
const (
	CodeBookingNotLinearizable = "booking_not_linearizable"
	CodeDriverNotLinearizable  = "driver_not_linearizable"
)

// DefaultDriverReadLag is how stale a driver read is assumed to be able
// to be: the router stops reading from a replica whose lag exceeds 2 s
// (--redis-max-replica-lag; Redis reports whole seconds, so under 3 s),
// found within its 500 ms check: 4 s leaves half a second to spare. A
// larger window only loosens the check, and slows porcupine down.
const DefaultDriverReadLag = 4 * time.Second

// Options tune Check.
type Options struct {
	// OutDir receives porcupine's HTML view of every partition found not
	// linearizable, as <model>-<id>.html; "" writes none.
	OutDir string
	// PartitionTimeout bounds porcupine on one partition (10 s when 0);
	// a partition not decided by then is reported as unknown.
	PartitionTimeout time.Duration
	// Parallelism is how many partitions are checked at once
	// (GOMAXPROCS when 0).
	Parallelism int
	// DriverReadLag is how stale a driver read may be (they are served
	// by replicas); DefaultDriverReadLag when 0. FreshDriverReads holds
	// driver reads to real-time order instead (read policy primary).
	DriverReadLag    time.Duration
	FreshDriverReads bool
	// Slack, when set, replaces the history's for the audits.
	Slack time.Duration
}

func (o Options) withDefaults() Options {
	if o.PartitionTimeout <= 0 {
		o.PartitionTimeout = 10 * time.Second
	}
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.DriverReadLag <= 0 {
		o.DriverReadLag = DefaultDriverReadLag
	}
	if o.FreshDriverReads {
		o.DriverReadLag = 0
	}
	return o
}

// Check checks h: every booking's lifecycle (BookingModel) and every
// driver's reservation register (DriverModel) with porcupine, one
// partition per entity, each within PartitionTimeout; then the audits
// (Audits), those that read the final state skipped when h has none. The
// report's verdict is fail if anything was violated, unknown if nothing
// was but porcupine could not decide a partition in time, pass otherwise.
// A partition found not linearizable is written as porcupine's HTML view
// into OutDir (created if need be) and named by its violation.
func Check(h History, opts Options) Report {
	opts = opts.withDefaults()
	if opts.Slack > 0 {
		h.Slack = opts.Slack
	}
	h.readLag = opts.DriverReadLag
	r := Report{Counts: countsOf(h), Violations: []Violation{}}
	bookings, drivers := BookingOps(h), DriverOps(h, opts.DriverReadLag)
	r.Counts.Bookings, r.Counts.BookingOpsChecked = sizeOf(bookings)
	r.Counts.Drivers, r.Counts.DriverOpsChecked = sizeOf(drivers)
	r.linearizable("booking_lifecycle", "booking", CodeBookingNotLinearizable, BookingModel(), bookings, opts)
	r.linearizable("driver_register", "driver", CodeDriverNotLinearizable, DriverModel(), drivers, opts)
	for _, a := range Audits() {
		if a.Skip != nil {
			if why := a.Skip(h); why != "" {
				r.Checks = append(r.Checks, CheckResult{Name: a.Code, Verdict: Skipped, Detail: why})
				continue
			}
		}
		vs := a.Run(h)
		r.add(a.Code, vs, "")
	}
	for i := range r.Violations {
		r.Violations[i].Faults = faultsNear(h, r.Violations[i].Ops)
	}
	r.Verdict = Pass
	for _, c := range r.Checks {
		switch {
		case c.Verdict == Fail:
			r.Verdict = Fail
		case c.Verdict == Undecided && r.Verdict == Pass:
			r.Verdict = Undecided
		}
	}
	return r
}

// add records a check's violations and verdict.
func (r *Report) add(name string, vs []Violation, detail string) {
	c := CheckResult{Name: name, Verdict: Pass, Detail: detail, Violations: len(vs)}
	if len(vs) > 0 {
		c.Verdict = Fail
	}
	r.Checks = append(r.Checks, c)
	r.Violations = append(r.Violations, vs...)
}

func countsOf(h History) Counts {
	c := Counts{Ops: len(h.Ops), ByOutcome: map[Outcome]int{}, ByKind: map[Kind]int{}}
	for _, op := range h.Ops {
		c.ByOutcome[op.Outcome]++
		c.ByKind[op.Kind]++
		if op.Outcome == Unknown && !op.Kind.isRead() && op.Deadline == 0 {
			c.UnknownOpen++
		}
	}
	for _, f := range h.Faults {
		if f.Action == "inject" && f.Err == "" {
			c.Faults++
		}
		if f.Err != "" {
			c.FaultErrors++
		}
	}
	c.ByFault = faultCounts(h)
	return c
}

// sizeOf counts partitions with something to check and their operations
// (not the final state's stand-in).
func sizeOf(parts map[string][]porcupine.Operation) (partitions, ops int) {
	for _, p := range parts {
		if len(p) > 0 {
			partitions++
		}
		for _, op := range p {
			if callID(op.Input) >= 0 {
				ops++
			}
		}
	}
	return partitions, ops
}

func callID(input any) int {
	switch c := input.(type) {
	case bookingCall:
		return c.Op
	case driverCall:
		return c.Op
	}
	return -1
}

// linearizable runs porcupine on every partition, Parallelism at a time.
func (r *Report) linearizable(name, model, code string, m porcupine.Model, parts map[string][]porcupine.Operation, opts Options) {
	keys := sortedKeys(parts)
	results := make([]PartitionResult, len(keys))
	violations := make([]*Violation, len(keys))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(opts.Parallelism, max(len(keys), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i], violations[i] = checkPartition(m, model, code, keys[i], parts[keys[i]], opts)
			}
		}()
	}
	for i := range keys {
		work <- i
	}
	close(work)
	wg.Wait()

	var vs []Violation
	checked, illegal, undecided := 0, 0, 0
	for i, pr := range results {
		if pr.Ops == 0 {
			continue
		}
		checked++
		switch pr.Verdict {
		case Fail:
			illegal++
			vs = append(vs, *violations[i])
		case Undecided:
			undecided++
		}
		if pr.Verdict != Pass {
			r.Partitions = append(r.Partitions, pr)
		}
	}
	detail := fmt.Sprintf("%d %s partitions: %d linearizable, %d not, %d undecided within %s", checked, model, checked-illegal-undecided, illegal, undecided, opts.PartitionTimeout)
	r.add(name, vs, detail)
	if illegal == 0 && undecided > 0 {
		r.Checks[len(r.Checks)-1].Verdict = Undecided
	}
}

// checkPartition runs porcupine on one partition; on a violation it
// explains it and writes the HTML view.
func checkPartition(m porcupine.Model, model, code, key string, ops []porcupine.Operation, opts Options) (PartitionResult, *Violation) {
	pr := PartitionResult{Model: model, Key: key, Ops: len(ops), Verdict: Pass}
	if len(ops) == 0 {
		return pr, nil
	}
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, ops, opts.PartitionTimeout)
	pr.Elapsed = time.Since(start)
	switch res {
	case porcupine.Ok:
		return pr, nil
	case porcupine.Unknown:
		pr.Verdict = Undecided
		return pr, nil
	}
	pr.Verdict = Fail
	v := explain(m, model, code, key, ops, info)
	if opts.OutDir != "" {
		path := filepath.Join(opts.OutDir, fileName(model, key))
		err := os.MkdirAll(opts.OutDir, 0o755)
		if err == nil {
			err = porcupine.VisualizePath(m, info, path)
		}
		if err != nil {
			v.Message += fmt.Sprintf(" (its HTML view could not be written: %v)", err)
		} else {
			v.File, pr.File = path, path
		}
	}
	return pr, &v
}

// explain says where porcupine got stuck: the longest order of the
// partition's operations the model allows, the state it leaves, and the
// operations that could have come next (invoked before any left out had
// returned), none of which the model allows there.
func explain(m porcupine.Model, model, code, key string, ops []porcupine.Operation, info porcupine.LinearizationInfo) Violation {
	var longest []porcupine.Operation
	if partials := info.PartialLinearizationsOperations(); len(partials) > 0 {
		for _, p := range partials[0] {
			if len(p) > len(longest) {
				longest = p
			}
		}
	}
	state := m.Init()
	in := map[int]bool{}
	for _, op := range longest {
		_, state = m.Step(state, op.Input, op.Output)
		in[callID(op.Input)] = true
	}
	var left []porcupine.Operation
	due := int64(math.MaxInt64)
	for _, op := range ops {
		if !in[callID(op.Input)] {
			left = append(left, op)
			due = min(due, op.Return)
		}
	}
	left = slices.DeleteFunc(left, func(op porcupine.Operation) bool { return op.Call > due })
	// In the order they were recorded (a read's Call may be moved back by
	// the read lag); the final state, -1, last.
	order := func(op porcupine.Operation) int {
		if id := callID(op.Input); id >= 0 {
			return id
		}
		return math.MaxInt
	}
	slices.SortStableFunc(left, func(a, b porcupine.Operation) int { return cmp.Compare(order(a), order(b)) })
	v := Violation{Code: code}
	if model == "booking" {
		v.Bookings = []string{key}
	} else {
		v.Drivers = []string{key}
	}
	var next []string
	for i, op := range left {
		if id := callID(op.Input); id >= 0 {
			v.Ops = append(v.Ops, id)
		}
		if i < 4 {
			next = append(next, m.DescribeOperation(op.Input, op.Output))
		}
	}
	if len(left) > 4 {
		next = append(next, fmt.Sprintf("%d more", len(left)-4))
	}
	v.Message = fmt.Sprintf("%s %s: no order of its %d operations is one the %s model allows; the longest that is (%d operations) leaves it %s, and none of the operations that could come next fits: %s",
		model, key, len(ops), model, len(longest), m.DescribeState(state), strings.Join(next, "; "))
	return v
}

// fileName is a file name for a partition's HTML view.
func fileName(model, key string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, key)
	return model + "-" + safe + ".html"
}
