package verify

import (
	"github.com/apollo-platform/apollo/internal/drill"
	"github.com/apollo-platform/apollo/internal/localcluster"
)

// disk makes a primary unable to persist, as a full disk does: its
// snapshot fails, and from then on it refuses every write, and PING, with
// MISCONF, while it still serves plain reads. Confirmed reads fail too:
// their fence is a write. Healing frees the snapshot's path and takes one
// that succeeds, which ends the refusals.
func (n *nemesis) disk(primary *localcluster.Node) drill.Fault {
	return drill.FaultFunc{Label: "primary cannot persist (snapshot failed, MISCONF) " + primary.Addr,
		InjectFn: primary.FailPersistence,
		HealFn:   primary.RestorePersistence,
	}
}
