package verify

import (
	"context"
	"fmt"

	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
)

// full makes a primary full: its maxmemory is set to 1 byte, below what
// it uses, so under the default noeviction policy it refuses every
// command that adds data (OOM) and still serves plain reads and deletes,
// as a shard that ran out of memory does. Confirmed reads fail too: their
// fence is a write. Healing puts the limit it had back.
// A node whose policy evicts would drop keys instead: Apollo refuses to
// start on such a cluster, so that is not a fault to survive.
func (n *nemesis) full(primary *localcluster.Node) drill.Fault {
	var was string
	return drill.FaultFunc{Label: "primary full (maxmemory reached) " + primary.Addr,
		InjectFn: func(ctx context.Context) error {
			cl := primary.Client()
			defer cl.Close()
			got, err := cl.ConfigGet(ctx, "maxmemory").Result()
			if err != nil {
				return err
			}
			was = got["maxmemory"]
			if was == "" {
				return fmt.Errorf("CONFIG GET maxmemory on %s: no value", primary.Addr)
			}
			return cl.ConfigSet(ctx, "maxmemory", "1").Err()
		},
		HealFn: func(ctx context.Context) error {
			if was == "" {
				return nil // never set
			}
			cl := primary.Client()
			defer cl.Close()
			return cl.ConfigSet(ctx, "maxmemory", was).Err()
		},
	}
}
