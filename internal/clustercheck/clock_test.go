package clustercheck

import (
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

func TestClockFindingsNameNodesWhoseClockIsCertainlyOff(t *testing.T) {
	node := func(addr string, off, unc time.Duration) Node {
		return Node{Addr: addr, Reachable: true, Clock: &redisroute.NodeClock{Addr: addr, Offset: off, Uncertainty: unc}}
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string // code:node:what the message says
	}{
		{"in step", []Node{node("a", 2*ms, ms), node("b", -3*ms, ms)}, nil},
		{"one node 2 s ahead", []Node{node("a", 2*time.Second, ms), node("b", 0, ms)},
			[]string{"clock_skew:a:+2s from this machine's"}},
		{"one node 900 ms behind", []Node{node("a", 0, ms), node("b", -900*ms, ms)},
			[]string{"clock_skew:b:-900ms"}},
		{"a slow round trip explains the offset", []Node{node("a", 700*ms, 300*ms), node("b", 0, ms)}, nil},
		{"every node off: this machine is", []Node{node("a", 3*time.Second, ms), node("b", 3*time.Second+2*ms, ms)},
			[]string{"clock_skew:a:+3s", "clock_skew:b:+3.002s", "clock_skew::this machine's clock that is off"}},
		{"every node off, but not by the same", []Node{node("a", 3*time.Second, ms), node("b", -3*time.Second, ms)},
			[]string{"clock_skew:a:+3s", "clock_skew:b:-3s"}},
		{"every node read is off, one reachable was not read", []Node{node("a", 3*time.Second, ms), node("b", 3*time.Second, ms), {Addr: "c", Reachable: true}},
			[]string{"clock_skew:a:+3s", "clock_skew:b:+3s"}},
		{"unread and unreachable nodes are not judged", []Node{{Addr: "a", Reachable: true}, {Addr: "b", Clock: &redisroute.NodeClock{Offset: time.Hour}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clockFindings(tc.nodes)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings %+v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				parts := strings.SplitN(w, ":", 3)
				if got[i].Code != parts[0] || got[i].Node != parts[1] || !strings.Contains(got[i].Message, parts[2]) || got[i].Severity != Warning {
					t.Errorf("finding %d = %v %s on %s %q, want a warning %s on %s saying %q", i, got[i].Severity, got[i].Code, got[i].Node, got[i].Message, parts[0], parts[1], parts[2])
				}
			}
		})
	}
}
