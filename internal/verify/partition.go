package verify

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// effect is what an operation's outcome lets a model conclude.
type effect uint8

const (
	// effectOK: it took effect, and its answer is what it returned.
	effectOK effect = iota
	// effectMaybe: it may or may not have taken effect.
	effectMaybe
	// effectRefused: it certainly did not take effect, and the refusal
	// says something about the state (a cancel refused as an illegal
	// transition: the booking was final; refused as not found: absent).
	effectRefused
)

func (e effect) String() string {
	switch e {
	case effectOK:
		return "ok"
	case effectMaybe:
		return "maybe"
	default:
		return "refused"
	}
}

// effectOf reads an op's outcome for the models; ok is false for an op
// that tells them nothing (a failed read, a write certainly refused for a
// reason that says nothing of the state). open reports an effect that may
// land after the op returned (an unknown outcome: the request may still
// be running on the server), so porcupine is given a later return (see
// timeline.operation).
func effectOf(op Op) (e effect, open, ok bool) {
	switch op.Outcome {
	case OK:
		return effectOK, false, true
	case Unknown:
		if op.Kind == ReadBooking || op.Kind == ReadDriver {
			return 0, false, false // a read that never answered says nothing
		}
		return effectMaybe, true, true
	case Failed:
		switch {
		case op.Kind == CancelBooking && op.Code == "illegal_transition":
			return effectRefused, false, true
		case op.Kind == CancelBooking && (op.Code == "not_found" || op.Status == http.StatusNotFound):
			return effectRefused, false, true
		case op.Kind == DriverEvent && op.Event == "accept" && op.Status != http.StatusBadRequest:
			// An accept is recorded on the driver before the booking
			// follows; when the booking step fails (409, 404) the
			// answer is an error although the driver accepted.
			return effectMaybe, false, true
		}
	}
	return 0, false, false
}

// absentAnswer reports an OK answer of "not found".
func absentAnswer(op Op) bool { return op.Status == http.StatusNotFound }

// timeline is what every partition shares: when the run ended (the return
// given to operations whose outcome is unknown) and when the final state
// was read.
type timeline struct {
	end      int64
	final    int64
	hasFinal bool
}

func timelineOf(h History) timeline {
	var t timeline
	for _, op := range h.Ops {
		t.end = max(t.end, op.Invoke, op.Return)
	}
	if !h.Final.At.IsZero() {
		t.hasFinal = true
		t.final = max(h.Final.At.Sub(h.Start).Nanoseconds(), t.end)
		t.end = t.final
	}
	t.end++
	return t
}

// clockSlack is how far past an op's Deadline its effect is still given
// room. The deadline is sent as wall-clock time and Redis checks it
// against its own wall clock (the same one here), while the history is
// timed by the monotonic clock: the two drift apart by at most the NTP
// slew rate (500 ppm, 0.15 s over five minutes). A step of the wall clock
// during a run would break the bound.
const clockSlack = time.Second

// operation is op as porcupine sees it, with input as the model's call.
// An open effect (see effectOf) may land until the op's deadline, and
// to the end of the run for an op recorded without one. Before deadlines
// an unknown write stayed open to the end: a few dozen of them on one
// driver left porcupine undecided.
func (t timeline) operation(op Op, input any, open bool) porcupine.Operation {
	ret := max(op.Return, op.Invoke)
	switch {
	case open && op.Deadline > 0:
		ret = min(t.end, max(ret, op.Deadline+clockSlack.Nanoseconds()))
	case open:
		ret = t.end
	}
	return porcupine.Operation{ClientId: op.Client, Input: input, Call: op.Invoke, Return: ret, Metadata: op.Instance}
}

// finish ends every partition with its entity's final state (absent when
// finals lacks it) as a read made after every operation, which must agree
// with everything before it, adding a partition for every entity only the
// final state has; then it numbers each partition's clients.
func (t timeline) finish(parts map[string][]porcupine.Operation, finals map[string]State, call func(found bool, s State) any) {
	if t.hasFinal {
		for id := range finals {
			if _, ok := parts[id]; !ok {
				parts[id] = nil
			}
		}
		for id := range parts {
			s, found := finals[id]
			parts[id] = append(parts[id], porcupine.Operation{ClientId: -1, Input: call(found, s), Call: t.final, Return: t.end, Metadata: "final state"})
		}
	}
	for _, ops := range parts {
		renumberClients(ops)
	}
}

// renumberClients makes a partition's client ids 0, 1, … in order of first
// operation, as porcupine's visualization wants; the final read (client
// -1) gets the last lane.
func renumberClients(ops []porcupine.Operation) {
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	ids := map[int]int{}
	for _, op := range ops {
		if _, ok := ids[op.ClientId]; !ok && op.ClientId >= 0 {
			ids[op.ClientId] = len(ids)
		}
	}
	last := len(ids)
	for i := range ops {
		if id, ok := ids[ops[i].ClientId]; ok {
			ops[i].ClientId = id
		} else {
			ops[i].ClientId = last
		}
	}
}
