package verify

import (
	"strings"
	"testing"
)

func TestRightsMissingNamesEveryRefusalNoFaultCaused(t *testing.T) {
	info := Denial{Node: "n1", Reason: "command", Context: "toplevel", Object: "info", Count: 40}
	asking := Denial{Node: "n2", Reason: "command", Context: "toplevel", Object: "asking", Count: 22}
	key := Denial{Node: "n3", Reason: "key", Context: "lua", Object: "apollo:drv:{d1}", Count: 1}
	revoked := []FaultEvent{{Kind: "rights-revoked", Fault: revokedLabel + "n1", Action: "inject"}, {Kind: "rights-revoked", Fault: revokedLabel + "n1", Action: "heal"}}
	jointRevoked := []FaultEvent{{Kind: "instance-kill+rights-revoked", Fault: "SIGKILL of apollo-1 + " + revokedLabel + "n1", Action: "inject"}}
	elsewhere := []FaultEvent{{Kind: "rights-revoked", Fault: revokedLabel + "n10", Action: "inject"}} // not n1
	tests := []struct {
		name    string
		faults  []FaultEvent
		denials []Denial
		want    []string // one substring per violation
	}{
		{"nothing refused", nil, nil, nil},
		{"a command missing from the list", nil, []Denial{asking}, []string{`n2 refused the instances' user "asking" 22 times (command denied, toplevel)`}},
		{"a key outside the pattern, from a script", nil, []Denial{key}, []string{`"apollo:drv:{d1}" 1 times (key denied, lua)`}},
		{"INFO refused without the fault that takes it", nil, []Denial{info}, []string{`"info" 40 times`}},
		{"INFO refused while rights-revoked took it", revoked, []Denial{info}, nil},
		{"INFO refused, rights-revoked joint with another", jointRevoked, []Denial{info}, nil},
		{"INFO refused on a node rights-revoked did not touch", elsewhere, []Denial{info}, []string{`n1 refused the instances' user "info"`}},
		{"rights-revoked does not excuse another command", revoked, []Denial{info, asking}, []string{`"asking"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RightsMissing(History{Faults: tt.faults, Denials: tt.denials, ACLLogRead: true})
			if len(got) != len(tt.want) {
				t.Fatalf("%d violations, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				if got[i].Code != CodeRightsMissing || !strings.Contains(got[i].Message, w) {
					t.Errorf("violation %d = %+v, want %s saying %q", i, got[i], CodeRightsMissing, w)
				}
			}
		})
	}
	if why := rightsUnjudged(History{}); why == "" {
		t.Error("a history without ACL logs read is judged")
	}
}
