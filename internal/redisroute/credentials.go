package redisroute

import (
	"context"
	"log/slog"

	"github.com/apollo-platform/apollo/internal/secret"
)

// newPasswordFile gives every new connection the password the file at
// path holds then (fileSource). Read once at start, a rotated password
// left Apollo with only its old connections, and every new one (a
// reconnect after a failover or a node restart, a pool growing under
// load) refused WRONGPASS once the old password was removed — on every
// node at once.
func newPasswordFile(path, first string, m *metrics, log *slog.Logger) *fileSource[string] {
	return (&fileSource[string]{what: "redis password file", files: []string{path},
		load:    func() (string, error) { return secret.ReadFile(path) },
		same:    func(a, b string) bool { return a == b },
		changed: func(string) { m.passwordChanges.Inc() },
		errors:  m.passwordFileErrors, log: log}).from(first)
}

// credentialsFrom is go-redis's CredentialsProviderContext over a
// password file: called for every new connection, before its handshake.
func credentialsFrom(user string, pw *fileSource[string]) func(context.Context) (string, string, error) {
	return func(context.Context) (string, string, error) { return user, pw.get(), nil }
}
