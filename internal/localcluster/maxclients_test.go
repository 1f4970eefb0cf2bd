package localcluster_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// FillClients makes a node full, as another application's connections
// would: a connection in use goes on being served, an idle one is closed,
// a new one is refused; UnfillClients puts maxclients back.
func TestAFullNodeServesItsConnectionsInUseAndRefusesNewOnes(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 0 })
	ctx := ctxFor(t, 30*time.Second)
	n := c.Primary(ctx, 0)
	busy, idle := n.Client(), n.Client()
	defer busy.Close()
	defer idle.Close()
	if err := idle.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { // a connection in use: a command every 10 ms
		for {
			select {
			case <-stop:
				served <- nil
				return
			case <-time.After(10 * time.Millisecond):
			}
			if err := busy.Ping(ctx).Err(); err != nil {
				served <- err
				return
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond) // idle's connection idle for a second
	if err := n.FillClients(ctx); err != nil {
		close(stop)
		t.Fatal(err)
	}
	if err := n.FillClients(ctx); err == nil {
		t.Error("a second FillClients succeeded, want it refused")
	}
	// Redis greets the new connection with its refusal, then closes it
	// (go-redis reports only the broken pipe after it: redisroute's
	// setupconn.go).
	if greeting := greetingOf(t, n.Addr); !strings.HasPrefix(greeting, "-ERR max number of clients") {
		t.Errorf("a new connection to the full node was greeted %q, want the maxclients refusal", greeting)
	}
	if err := idle.Ping(ctx).Err(); err == nil {
		t.Error("PING on the idle client of the full node succeeded: its connection was not closed, or it made a new one")
	}
	close(stop)
	if err := <-served; err != nil {
		t.Errorf("the connection in use failed while the node was full: %v", err)
	}
	if err := n.UnfillClients(ctx); err != nil {
		t.Fatal(err)
	}
	if greeting := greetingOf(t, n.Addr); greeting != "" {
		t.Errorf("a new connection to the node no longer full was greeted %q, want nothing", greeting)
	}
	after := n.Client()
	defer after.Close()
	if got, err := after.ConfigGet(ctx, "maxclients").Result(); err != nil || got["maxclients"] != "10000" {
		t.Errorf("maxclients after = %v, %v, want 10000 (the default) back", got, err)
	}
	if err := n.UnfillClients(ctx); err != nil {
		t.Errorf("UnfillClients on a node not full = %v, want nil", err)
	}
}

// greetingOf is what the node at addr writes to a new connection before
// anything is asked (nothing, within 500 ms, for a node with room).
func greetingOf(t *testing.T, addr string) string {
	t.Helper()
	cn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	_ = cn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 128)
	k, _ := cn.Read(buf)
	return string(buf[:k])
}
