package verify

import (
	"reflect"
	"testing"
)

func TestFaultCountsPairEachInjectWithItsHeal(t *testing.T) {
	op := func(at int64, o Outcome, status int) Op {
		return Op{Invoke: at, Return: at + 1, Outcome: o, Status: status}
	}
	h := History{
		Ops: []Op{op(5, OK, 200), op(15, Unknown, 503), op(18, Failed, 409), op(25, OK, 200), op(35, OK, 200), op(45, Unknown, 0), op(60, OK, 200)},
		Faults: []FaultEvent{
			{Kind: "primary-partition", Fault: "p1", Action: "inject", At: 10},
			{Kind: "primary-partition", Fault: "p1", Action: "heal", At: 20, Effect: "took 3 writes"},
			{Kind: "handshake", Fault: "h1", Action: "inject", At: 30, Err: "refused"}, // never injected
			{Kind: "handshake", Fault: "h1", Action: "heal", At: 40},
			{Kind: "cluster-restart", Fault: "r1", Action: "inject", At: 44}, // the run ended first
		},
	}
	want := []FaultCounts{
		{Kind: "primary-partition", Injected: 1, Ops: 2, Failed: 1, Unknown: 1, Unavailable: 1, Effects: []string{"took 3 writes"}},
		{Kind: "cluster-restart", Injected: 1, Ops: 2, OK: 1, Unknown: 1, Unavailable: 1},
	}
	if got := faultCounts(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("faultCounts =\n%+v\nwant\n%+v", got, want)
	}
}

// A violation names the faults that lasted within 2 s of its operations,
// before or after: a failover drops what was written just before it.
func TestAViolationNamesTheFaultsNearItsOperations(t *testing.T) {
	s := int64(1e9)
	h := History{
		Ops: []Op{{ID: 0, Invoke: 10 * s, Return: 10*s + 3}, {ID: 1, Invoke: 11 * s, Return: 11 * s}, {ID: 2, Invoke: 40 * s, Return: 40 * s}, {ID: 3, Invoke: 30 * s, Return: 30 * s}},
		Faults: []FaultEvent{
			{Kind: "switchover", Fault: "long before", Action: "inject", At: 1 * s},
			{Kind: "switchover", Fault: "long before", Action: "heal", At: 7 * s},
			{Kind: "forced-switchover", Fault: "just after the write", Action: "inject", At: 10*s + 4},
			{Kind: "forced-switchover", Fault: "just after the write", Action: "heal", At: 16 * s},
			{Kind: "handshake", Fault: "just after the read", Action: "inject", At: 13 * s},
			{Kind: "handshake", Fault: "just after the read", Action: "heal", At: 19 * s},
			{Kind: "busy-script", Fault: "heal failed", Action: "inject", At: 25 * s},
			{Kind: "busy-script", Fault: "heal failed", Action: "heal", At: 31 * s, Err: "SCRIPT KILL refused"},
			{Kind: "reshard", Fault: "never healed", Action: "inject", At: 39 * s},
		},
	}
	for _, tc := range []struct {
		name string
		ops  []int
		want []string
	}{
		{"a write and a read", []int{0, 1}, []string{
			"forced-switchover: just after the write, injected at 10.000s, healed by 16.000s",
			"handshake: just after the read, injected at 13.000s, healed by 19.000s"}},
		{"inside a fault never healed", []int{2}, []string{"reshard: never healed, injected at 39.000s, never healed"}},
		{"a fault whose heal failed", []int{3}, []string{"busy-script: heal failed, injected at 25.000s, its heal failed at 31.000s (SCRIPT KILL refused)"}},
		{"no operations", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := faultsNear(h, tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("faultsNear = %q, want %q", got, tc.want)
			}
		})
	}
}
