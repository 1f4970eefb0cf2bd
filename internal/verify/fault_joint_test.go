package verify

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apollo-platform/apollo/internal/drill"
)

func TestParseFaultsTakesTwoFaultsTogether(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "replica-crash, instance-kill+forced-switchover", want: []string{"replica-crash", "instance-kill+forced-switchover"}},
		{in: "primary-crash+instance-pause", want: []string{"primary-crash+instance-pause"}},
		{in: "instance-kill + replica-crash", want: []string{"instance-kill+replica-crash"}},
		{in: "primary-crash+replica-crash", wantErr: "one of the two must be an instance's"},
		{in: "instance-kill+instance-pause", wantErr: "one of the two must be an instance's"},
		{in: "instance-kill+reshard+switchover", wantErr: "faults together are two"},
		{in: "instance-kill+typo", wantErr: `unknown fault "typo"`},
		{in: "typo", wantErr: `unknown fault "typo"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseFaults(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseFaults(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseFaults(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
	if !usesFault([]string{"instance-kill+reshard"}, "reshard") || usesFault([]string{"instance-kill"}, "reshard") {
		t.Error("usesFault does not see a fault inside a pair, or sees one that is not there")
	}
}

// A joint fault injects in order, heals in the reverse order, and still
// injects and heals the second when the first's injection failed; it
// fails its injection only when no part went in (a failed inject has no
// window in the history), and names the part that did not.
func TestAJointFaultHealsInTheReverseOrder(t *testing.T) {
	var did []string
	step := func(name string, err error) drill.Fault {
		return drill.FaultFunc{Label: name,
			InjectFn: func(context.Context) error { did = append(did, "inject "+name); return err },
			HealFn:   func(context.Context) error { did = append(did, "heal "+name); return nil }}
	}
	f := &jointFault{parts: []drill.Fault{step("a", errors.New("refused")), step("b", nil)}}
	if err := f.Inject(context.Background()); err != nil {
		t.Errorf("Inject = %v, want nil: b went in", err)
	}
	if err := f.Heal(context.Background()); err != nil {
		t.Errorf("Heal = %v", err)
	}
	if want := []string{"inject a", "inject b", "heal b", "heal a"}; !slices.Equal(did, want) {
		t.Errorf("did %v, want %v", did, want)
	}
	if f.Name() != "a + b" || f.Effect() != "not injected: a: refused" {
		t.Errorf("Name = %q, Effect = %q", f.Name(), f.Effect())
	}
	none := &jointFault{parts: []drill.Fault{step("a", errors.New("refused")), step("b", errors.New("gone"))}}
	if err := none.Inject(context.Background()); err == nil || !strings.Contains(err.Error(), "a: refused") || !strings.Contains(err.Error(), "b: gone") {
		t.Errorf("Inject of two failing parts = %v, want both errors, named", err)
	}
}

// A random schedule draws every fault, and pairs that parse, from its
// seed: the same seed, the same schedule.
func TestARandomScheduleDrawsEveryFaultFromItsSeed(t *testing.T) {
	if got, err := ParseFaults(RandomFaults); err != nil || len(got) != 1 || got[0] != RandomFaults {
		t.Fatalf("ParseFaults(random) = %v, %v", got, err)
	}
	draw := func(seed uint64) []string {
		rng := rand.New(rand.NewPCG(seed, 7))
		out := make([]string, 2000)
		for i := range out {
			out[i] = drawFault(rng)
		}
		return out
	}
	a := draw(1)
	if !slices.Equal(a, draw(1)) || slices.Equal(a, draw(2)) {
		t.Fatal("a schedule is not its seed's alone")
	}
	seen, pairs := map[string]bool{}, 0
	for _, f := range a {
		if strings.Contains(f, "+") {
			pairs++
			if _, err := parseJoint(f); err != nil {
				t.Fatalf("drew %q: %v", f, err)
			}
		}
		for _, p := range faultParts(f) {
			seen[p] = true
		}
	}
	for _, f := range FaultNames() {
		if !seen[f] {
			t.Errorf("%s never drawn in 2000", f)
		}
	}
	if pairs < 500 || pairs > 830 {
		t.Errorf("%d pairs in 2000 draws, want about a third", pairs)
	}
	if got := scheduled(a[:0:0]); len(got) != 0 {
		t.Errorf("an empty schedule needs %v", got)
	}
	if !slices.Equal(scheduled([]string{RandomFaults}), FaultNames()) {
		t.Error("a random schedule does not need what every fault needs")
	}
}
