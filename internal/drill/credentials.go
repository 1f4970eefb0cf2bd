package drill

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// Credentials are a Redis ACL user made on every node of a local cluster
// for the clients under test, and a file holding its password, as a
// mounted secret: the harness keeps the default user, so that a fault on
// these credentials leaves its own commands alone. Rotate rotates the
// password; faults on it must not overlap.
type Credentials struct {
	c    *localcluster.Cluster
	User string
	File string

	mu         sync.Mutex
	password   string
	generation int
}

// NewCredentials makes user on every node of c (kept in each node's
// configuration file, so that a node restarted later has it) with the
// given ACL rules, or every right without any, and writes its password
// into a file in dir.
func NewCredentials(ctx context.Context, c *localcluster.Cluster, user, dir string, rules ...string) (*Credentials, error) {
	cr := &Credentials{c: c, User: user, File: filepath.Join(dir, user+"-redis-password"), password: newPassword(0)}
	if len(rules) == 0 {
		rules = []string{"~*", "&*", "+@all"}
	}
	if err := c.SetUser(ctx, user, append([]string{"on", ">" + cr.password}, rules...)...); err != nil {
		return nil, err
	}
	return cr, cr.write(cr.password)
}

// Password is the password the user has now.
func (cr *Credentials) Password() string {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.password
}

// Rotate rotates the password in the harshest order an operator and a
// secret manager can take, within milliseconds: the new password added to
// the user on every node, the file rewritten at once (a new file renamed
// over it, as a secret manager does), the old password removed, and every
// connection of the user killed, so that every command after it needs a
// new connection. It returns how many connections it killed.
func (cr *Credentials) Rotate(ctx context.Context) (int64, error) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	next := newPassword(cr.generation + 1)
	if err := cr.c.SetUser(ctx, cr.User, ">"+next); err != nil {
		return 0, err
	}
	if err := cr.write(next); err != nil {
		return 0, err
	}
	old := cr.password
	cr.password, cr.generation = next, cr.generation+1
	if err := cr.c.SetUser(ctx, cr.User, "<"+old); err != nil {
		return 0, err
	}
	return cr.c.KillClients(ctx, cr.User)
}

// RefuseOn makes node refuse the user's password (another one set on it
// alone, not saved: a rotation half done, or a node set up apart) and
// kills the user's connections there, so that every connection made to it
// fails its handshake. undo gives the user its password back; it is
// returned whenever the password may have changed, an error or not, so
// that a heal can undo an injection that failed half way.
func (cr *Credentials) RefuseOn(ctx context.Context, node *localcluster.Node) (undo func(context.Context) error, err error) {
	undo = func(ctx context.Context) error {
		cl := node.Client()
		defer cl.Close()
		pw := cr.Password()
		return localcluster.Redacted(cl.Do(ctx, "ACL", "SETUSER", cr.User, "resetpass", ">"+pw).Err(), pw)
	}
	cl := node.Client()
	defer cl.Close()
	refused := "refused-" + rand.Text()
	if err := cl.Do(ctx, "ACL", "SETUSER", cr.User, "resetpass", ">"+refused).Err(); err != nil {
		return undo, localcluster.Redacted(err, refused)
	}
	return undo, cl.ClientKillByFilter(ctx, "USER", cr.User).Err()
}

// DenyOn takes command from the user on node alone (ACL SETUSER -command,
// not saved), as an ACL narrowed on some nodes does: -@dangerous takes
// INFO. undo gives it back.
func (cr *Credentials) DenyOn(ctx context.Context, node *localcluster.Node, command string) (undo func(context.Context) error, err error) {
	set := func(ctx context.Context, rule string) error {
		cl := node.Client()
		defer cl.Close()
		return cl.Do(ctx, "ACL", "SETUSER", cr.User, rule).Err()
	}
	undo = func(ctx context.Context) error { return set(ctx, "+"+command) }
	return undo, set(ctx, "-"+command)
}

func (cr *Credentials) write(password string) error {
	return localcluster.ReplaceFile(cr.File, []byte(password+"\n"), 0o600)
}

// newPassword is a fresh password of generation g (the generation only
// makes a file easier to follow).
func newPassword(g int) string { return fmt.Sprintf("gen%d-%s", g, rand.Text()) }
