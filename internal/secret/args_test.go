package secret_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apollo-platform/apollo/internal/secret"
)

func TestRedactArgsHidesEveryFormOfASecretFlag(t *testing.T) {
	cases := []struct {
		name      string
		args, out []string
	}{
		{"double dash and equals", []string{"apollo", "serve", "--redis-password=hunter2"}, []string{"apollo", "serve", "--redis-password=[redacted]"}},
		{"single dash and equals", []string{"-redis-password=hunter2"}, []string{"-redis-password=[redacted]"}},
		{"value as the next argument", []string{"--redis-password", "hunter2", "--listen", ":80"}, []string{"--redis-password", "[redacted]", "--listen", ":80"}},
		{"empty value", []string{"--redis-password="}, []string{"--redis-password=[redacted]"}},
		{"last argument without a value", []string{"--redis-password"}, []string{"--redis-password"}},
		{"other flags untouched", []string{"--redis-password-file", "/run/pw", "--redis-user=apollo"}, []string{"--redis-password-file", "/run/pw", "--redis-user=apollo"}},
		{"a value that looks like the flag", []string{"--redis-user", "--redis-password=x"}, []string{"--redis-user", "--redis-password=[redacted]"}},
		{"after --", []string{"--", "--redis-password=x"}, []string{"--", "--redis-password=[redacted]"}},
		{"-- as a value before it", []string{"--redis-user", "--", "--redis-password=x"}, []string{"--redis-user", "--", "--redis-password=[redacted]"}},
		{"two secrets", []string{"--redis-password=a", "--admin-token", "b"}, []string{"--redis-password=[redacted]", "--admin-token", "[redacted]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.args)
			got := secret.RedactArgs(c.args, "redis-password", "admin-token")
			if !slices.Equal(got, c.out) {
				t.Errorf("RedactArgs(%q) = %q, want %q", c.args, got, c.out)
			}
			if !slices.Equal(c.args, in) {
				t.Errorf("RedactArgs changed its input: %q", c.args)
			}
		})
	}
}

func TestReadFileTrimsAndRefusesEmptyOrHuge(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := secret.ReadFile(write("pw", "  s3cret\n")); err != nil || got != "s3cret" {
		t.Errorf("ReadFile = %q, %v; want s3cret", got, err)
	}
	if _, err := secret.ReadFile(write("empty", "\n \n")); !errors.Is(err, secret.ErrEmpty) {
		t.Errorf("empty file: %v, want ErrEmpty", err)
	}
	huge := make([]byte, 5000)
	for i := range huge {
		huge[i] = 'x'
	}
	if _, err := secret.ReadFile(write("huge", string(huge))); err == nil {
		t.Error("a 5,000-byte file was read as a secret")
	}
	if _, err := secret.ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
