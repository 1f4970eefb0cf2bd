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

// crc16Bitwise is CRC-16/XMODEM as specified, a bit at a time
// (polynomial 0x1021, initial value 0): what the table must give.
func crc16Bitwise(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16TableIsThePolynomial(t *testing.T) {
	for b := 0; b < 256; b++ {
		if got, want := crc16tab[b], crc16Bitwise(string([]byte{byte(b)})); got != want {
			t.Errorf("crc16tab[%#x] = %#04x, want %#04x", b, got, want)
		}
	}
}

func FuzzSlot(f *testing.F) {
	for _, s := range []string{"", "{", "}", "{}", "a{b}c", "{{}}", "driver:{42}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := crc16(key), crc16Bitwise(key); got != want {
			t.Fatalf("crc16(%q) = %#04x, the bitwise CRC is %#04x", key, got, want)
		}
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
