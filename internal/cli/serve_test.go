package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// The Redis password and the admin token, given by flag, file or
// environment, appear in no HTTP answer (public, admin or health; bodies
// and headers), no log line and no metric; and pprof's cmdline shows a
// password given by flag redacted.
func TestServeNeverShowsASecret(t *testing.T) {
	const pw = "pw-7f3c9e1d-never-shown"
	const token = "tok-5b2a8d4e-never-shown-either"
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Password = pw })
	dir := t.TempDir()
	pwFile, tokenFile := filepath.Join(dir, "redis-password"), filepath.Join(dir, "admin-token")
	for path, v := range map[string]string{pwFile: pw + "\n", tokenFile: token + "\n"} {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"serve", "--redis-addrs", c.Addrs()[0], "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--health-listen", "127.0.0.1:0", "--admin-token-file", tokenFile, "--log-level", "debug", "--drain-delay", "0s"}
	ways := []struct {
		name     string
		args     []string
		env      string
		redacted bool // the password is on the command line, so cmdline must show it redacted
	}{
		{name: "flag", args: []string{"--redis-password", pw}, redacted: true},
		{name: "flag=", args: []string{"--redis-password=" + pw}, redacted: true},
		{name: "file", args: []string{"--redis-password-file", pwFile}},
		{name: "environment", env: pw},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			if w.env != "" {
				t.Setenv("APOLLO_REDIS_PASSWORD", w.env)
			}
			var seen bytes.Buffer // everything a user or a scraper could see
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errs syncBuffer
			done := make(chan int, 1)
			go func() { done <- Run(ctx, append(append([]string{}, base...), w.args...), &out, &errs) }()
			api, admin, health := waitServing(t, &out, &errs, done)
			auth := http.Header{"Authorization": {"Bearer " + token}}
			wrong := http.Header{"Authorization": {"Bearer " + token[:10]}}
			body := `{"lat":1.3,"lng":103.8}`
			for _, r := range []struct {
				method, url, body string
				header            http.Header
				want              int
			}{
				{"PUT", api + "/v1/drivers/d-1/location", body, nil, 200},
				{"GET", api + "/v1/drivers/d-1", "", nil, 200},
				{"GET", api + "/v1/drivers/nobody", "", nil, 404},
				{"POST", api + "/v1/bookings", `{"rider_id":""}`, nil, 400},
				{"GET", api + "/nope", "", auth, 404},
				{"GET", admin + "/metrics", "", nil, 200},
				{"GET", admin + "/readyz", "", nil, 200},
				{"GET", admin + "/livez", "", nil, 200},
				{"GET", admin + "/v1/spampede/rules", "", nil, 200},
				{"GET", admin + "/debug/pprof/cmdline", "", nil, 401},
				{"GET", admin + "/debug/pprof/cmdline", "", wrong, 401},
				{"GET", admin + "/debug/pprof/cmdline", "", auth, 200},
				{"GET", admin + "/debug/pprof/", "", auth, 200},
				{"GET", admin + "/debug/pprof/goroutine?debug=2", "", auth, 200},
				{"PUT", admin + "/v1/spampede/rules", `{"version":1,"rules":[]}`, nil, 401},
				{"GET", health + "/metrics", "", nil, 200},
				{"GET", health + "/readyz", "", nil, 200},
			} {
				status, text := exchange(t, r.method, r.url, r.body, r.header)
				if status != r.want {
					t.Errorf("%s %s = %d, want %d: %.300s", r.method, r.url, status, r.want, text)
				}
				seen.WriteString(text)
				if strings.HasSuffix(r.url, "/cmdline") && status == 200 {
					cmdline := strings.ReplaceAll(text, "\x00", " ")
					if !strings.Contains(cmdline, "serve --redis-addrs") || w.redacted != strings.Contains(cmdline, "[redacted]") {
						t.Errorf("cmdline = %q: want the arguments, the password redacted if given by flag", cmdline)
					}
				}
			}
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("serve exited with %d: %s", code, errs.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop within 30 s")
			}
			seen.WriteString(out.String())
			seen.WriteString(errs.String())
			if !strings.Contains(errs.String(), `"msg":"starting apollo"`) {
				t.Fatalf("no log captured: %s", errs.String())
			}
			for name, s := range map[string]string{"the Redis password": pw, "the admin token": token} {
				if strings.Contains(seen.String(), s) {
					i := strings.Index(seen.String(), s)
					t.Errorf("%s appears in what serve showed: …%s…", name, seen.String()[max(0, i-200):i+len(s)])
				}
			}
		})
	}
	// A wrong password is refused by every node; the refusal names no password.
	t.Run("wrong password", func(t *testing.T) {
		const bad = "pw-wrong-1a2b3c4d-never-shown"
		code, out, errs := run(t, context.Background(), append(append([]string{}, base...), "--redis-password", bad)...)
		if code == 0 || strings.Contains(out+errs, bad) || strings.Contains(out+errs, pw) {
			t.Errorf("exit %d; output shows a password or none was refused:\n%s%s", code, out, errs)
		}
	})
}

// waitServing waits for serve's banner and returns its three base URLs.
func waitServing(t *testing.T, out, errs *syncBuffer, done <-chan int) (api, admin, health string) {
	t.Helper()
	banner := regexp.MustCompile(`API on (http://\S+), admin on (http://\S+), health on (http://\S+)\n`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m := banner.FindStringSubmatch(out.String()); m != nil {
			return m[1], m[2], m[3]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start in 30 s: %s%s", out.String(), errs.String())
		}
	}
}

// exchange makes one request and returns its status and everything the
// answer showed: the status line, the headers and the body.
func exchange(t *testing.T, method, url, body string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n", resp.Status)
	_ = resp.Header.Write(&sb)
	sb.Write(b)
	return resp.StatusCode, sb.String()
}

// Secrets (and settings) given wrongly are refused before anything
// starts, with a message that names the flag and the file, never the
// secret.
func TestServeRefusesBadSecretsClearly(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short, empty, pw := file("short", "tooshort-x\n"), file("empty", "\n"), file("pw", "pw-in-a-file-31c9\n")
	base := []string{"serve", "--redis-addrs", "127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a short admin token", []string{"--admin-token-file", short}, "admin token must be at least 16 characters"},
		{"an empty admin token file", []string{"--admin-token-file", empty}, "--admin-token-file: secret file is empty"},
		{"a missing admin token file", []string{"--admin-token-file", filepath.Join(dir, "none")}, "no such file"},
		{"the password twice", []string{"--redis-password-file", pw, "--redis-password", "pw-by-flag-77d2"}, "give the Redis password once"},
		{"an empty password file", []string{"--redis-password-file", empty}, "--redis-password-file: secret file is empty"},
		{"a clock off by a day", []string{"--clock-offset", "24h"}, "clock offset must be within ±1h0m0s, got 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, context.Background(), append(append([]string{}, base...), tt.args...)...)
			if code != exitUsage || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want usage error containing %q", code, errs, tt.want)
			}
			for _, secret := range []string{"tooshort-x", "pw-in-a-file-31c9", "pw-by-flag-77d2"} {
				if strings.Contains(out+errs, secret) {
					t.Errorf("the output shows a secret: %s%s", out, errs)
				}
			}
		})
	}
}
