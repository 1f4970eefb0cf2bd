package verify

import (
	"reflect"
	"testing"
)

func TestFaultCountsPairEachInjectWithItsHeal(t *testing.T) {
	op := func(at int64, o Outcome) Op { return Op{Invoke: at, Return: at + 1, Outcome: o} }
	h := History{
		Ops: []Op{op(5, OK), op(15, Unknown), op(18, Failed), op(25, OK), op(35, OK), op(45, Unknown), op(60, OK)},
		Faults: []FaultEvent{
			{Kind: "primary-partition", Fault: "p1", Action: "inject", At: 10},
			{Kind: "primary-partition", Fault: "p1", Action: "heal", At: 20, Effect: "took 3 writes"},
			{Kind: "handshake", Fault: "h1", Action: "inject", At: 30, Err: "refused"}, // never injected
			{Kind: "handshake", Fault: "h1", Action: "heal", At: 40},
			{Kind: "cluster-restart", Fault: "r1", Action: "inject", At: 44}, // the run ended first
		},
	}
	want := []FaultCounts{
		{Kind: "primary-partition", Injected: 1, Ops: 2, Failed: 1, Unknown: 1, Effects: []string{"took 3 writes"}},
		{Kind: "cluster-restart", Injected: 1, Ops: 2, OK: 1, Unknown: 1},
	}
	if got := faultCounts(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("faultCounts =\n%+v\nwant\n%+v", got, want)
	}
}
