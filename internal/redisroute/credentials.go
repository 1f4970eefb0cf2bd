package redisroute

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/secret"
)

// passwordFile gives every new connection the password its file holds
// then, so that a rotated secret (a mounted file a secret manager
// rewrites) is used from the next connection on, without a restart. A
// connection authenticates once, when it is made: read once at start, a
// rotated password left Apollo with only its old connections, and every
// new one (a reconnect after a failover or a node restart, a pool
// growing under load) refused WRONGPASS once the old password was
// removed — the whole fleet at once.
//
// A file that cannot be read (unmounted, replaced by an empty one) keeps
// the password read before: a rotation does not go through an empty
// secret, and a connection made with the last good password is no worse
// than the connections already open.
type passwordFile struct {
	path, user string
	log        *slog.Logger
	changes    prometheus.Counter
	errors     prometheus.Counter

	mu      sync.Mutex
	last    string // the password the last connection was given
	failing bool   // the last read failed (logged once until one succeeds)
}

// credentials is go-redis's CredentialsProviderContext: called for every
// new connection, before its handshake.
func (p *passwordFile) credentials(context.Context) (user, password string, err error) {
	pw, err := secret.ReadFile(p.path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errors.Inc()
		if !p.failing {
			p.failing = true
			p.log.Warn("redis password file cannot be read; new connections keep the password read before", "file", p.path, "error", err)
		}
		return p.user, p.last, nil
	}
	if p.failing {
		p.failing = false
		p.log.Info("redis password file can be read again", "file", p.path)
	}
	if pw != p.last {
		p.last = pw
		p.changes.Inc()
		p.log.Info("redis password changed in its file; new connections use it", "file", p.path)
	}
	return p.user, pw, nil
}
