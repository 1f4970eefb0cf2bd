package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// fillFault is what FillClients did, for UnfillClients to undo.
type fillFault struct {
	maxclients string // before
	cl         *redis.Client
	admin      *redis.Conn // held open: the full node takes no new connection
}

// FillClients makes n full, as another application's connections would:
// maxclients is set to the connections n has (the cluster bus's count
// too), less those of its plain clients idle for a second or more, which
// are then closed. Connections in use stay, and are served; every new one
// is greeted with "-ERR max number of clients + cluster connections
// reached" and closed, so a client that needs one more connection, or
// lost an idle one, cannot have it. UnfillClients puts maxclients back.
func (n *Node) FillClients(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.filled != nil {
		return fmt.Errorf("%s is full already", n.Addr)
	}
	cl := n.Client()
	admin := cl.Conn()
	f := &fillFault{cl: cl, admin: admin}
	err := f.fill(ctx, n.Addr)
	if err != nil {
		// maxclients may have been set though its answer was lost; put
		// it back even if ctx is what ended fill.
		if f.maxclients != "" {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err = errors.Join(err, f.admin.ConfigSet(rctx, "maxclients", f.maxclients).Err())
			cancel()
		}
		return errors.Join(err, f.close())
	}
	n.filled = f
	return nil
}

func (f *fillFault) fill(ctx context.Context, addr string) error {
	got, err := f.admin.ConfigGet(ctx, "maxclients").Result()
	if err != nil || got["maxclients"] == "" {
		return fmt.Errorf("CONFIG GET maxclients on %s: %v", addr, err)
	}
	f.maxclients = got["maxclients"]
	own, err := f.admin.ClientID(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLIENT ID on %s: %w", addr, err)
	}
	list, err := f.admin.ClientList(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLIENT LIST on %s: %w", addr, err)
	}
	info, err := f.admin.Info(ctx, "clients").Result()
	if err != nil {
		return fmt.Errorf("INFO clients on %s: %w", addr, err)
	}
	clients, idle := idlePlainClients(list, own)
	limit := max(clients-len(idle)+int(InfoField(info, "cluster_connections")), 1)
	if err := f.admin.ConfigSet(ctx, "maxclients", strconv.Itoa(limit)).Err(); err != nil {
		return fmt.Errorf("CONFIG SET maxclients %d on %s: %w", limit, addr, err)
	}
	for _, id := range idle {
		// One may have gone meanwhile: no such client is no error here.
		_ = f.admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err()
	}
	return nil
}

// idlePlainClients reads CLIENT LIST: how many clients it lists, and the
// ids of the plain ones (not replicas, not a primary's link; read-only
// ones and subscribers included) other than own that have been idle for a
// second or more.
func idlePlainClients(list string, own int64) (clients int, idle []string) {
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if line == "" {
			continue
		}
		clients++
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		// Not replicas (S), not a replica's link to its primary (M); a
		// client that sent READONLY (r), as Apollo's do, is a plain one.
		if f["id"] == strconv.FormatInt(own, 10) || strings.ContainsAny(f["flags"], "SM") {
			continue
		}
		if secs, err := strconv.Atoi(f["idle"]); err == nil && secs >= 1 {
			idle = append(idle, f["id"])
		}
	}
	return clients, idle
}

// UnfillClients puts back the maxclients FillClients changed, over the
// connection it kept: the full node would refuse a new one, so if that
// connection was lost (CLIENT KILL, a partition), only a restart of the
// node ends the fault. A node not filled is left alone.
func (n *Node) UnfillClients(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	f := n.filled
	if f == nil {
		return nil
	}
	n.filled = nil
	var err error
	if f.maxclients != "" {
		err = f.admin.ConfigSet(ctx, "maxclients", f.maxclients).Err()
	}
	return errors.Join(err, f.close())
}

func (f *fillFault) close() error {
	return errors.Join(f.admin.Close(), f.cl.Close())
}
