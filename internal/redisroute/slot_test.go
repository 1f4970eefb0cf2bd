package redisroute

import (
	"testing"
)

func TestSlotMatchesRedis(t *testing.T) {
	// Values from CLUSTER KEYSLOT on Redis 7.
	tests := []struct {
		key  string
		want int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"123456789", 12739},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363}, // empty tag: the whole key is hashed
		{"foo{{bar}}zap", 4015},
		{"", 0},
	}
	for _, tt := range tests {
		if got := Slot(tt.key); got != tt.want {
			t.Errorf("Slot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func FuzzSlot(f *testing.F) {
	for _, s := range []string{"", "{", "}", "{}", "a{b}c", "{{}}", "driver:{42}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s := Slot(key)
		if s < 0 || s >= numSlots {
			t.Fatalf("Slot(%q) = %d, out of range", key, s)
		}
		if Slot("x{"+key+"}y") != Slot(key) && key != "" && !containsBrace(key) {
			t.Fatalf("hash tag {%s} does not route like the key itself", key)
		}
	})
}

func containsBrace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '}' {
			return true
		}
	}
	return false
}

func TestBudgetAllowsAFractionPlusBurst(t *testing.T) {
	b := newBudget(0.1, 2)
	if !b.withdraw() || !b.withdraw() {
		t.Fatal("burst of 2 not available")
	}
	if b.withdraw() {
		t.Fatal("withdrew beyond the burst")
	}
	b.deposit(9)
	if b.withdraw() {
		t.Fatal("9 requests at 10% earned a whole token")
	}
	b.deposit(1)
	if !b.withdraw() {
		t.Fatal("10 requests at 10% did not earn a token")
	}
	b.deposit(1000)
	n := 0
	for b.withdraw() {
		n++
	}
	if n != 2 {
		t.Fatalf("tokens after a long quiet time = %d, want the burst (2)", n)
	}
}
