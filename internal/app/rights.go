package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// ErrRedisRights: a Redis node's ACL denies Apollo's user a command Apollo
// needs, or its keys or channels.
var ErrRedisRights = errors.New("redis nodes deny Apollo's user commands it needs")

// rightsCheckTimeout bounds the check at start: a hung node delays the
// start by this much at most, and is not judged.
const rightsCheckTimeout = 2 * time.Second

// refuseWithoutRights fails when a node's ACL denies Apollo's user one of
// the commands, keys or channels Apollo needs (redisstore.Rights): such a
// user connects, reads and writes, yet a user denied INFO, the usual
// -@dangerous, has every acknowledged write fail its proof, and so every
// booking. The error names each node's denials and the rules that grant
// them. A node that does not answer now is not judged, and is named in a
// warning. The router asks again while Apollo runs (Config.Rights).
func refuseWithoutRights(ctx context.Context, r *redisroute.Router, user string, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, rightsCheckTimeout)
	defer cancel()
	denied, unknown := r.CheckRights(ctx, redisstore.Rights())
	if len(unknown) > 0 {
		log.Warn("could not ask some Redis nodes which commands they allow Apollo's user, so they are not checked",
			"nodes", strings.Join(unknown, "; "))
	}
	if len(denied) == 0 {
		return nil
	}
	var each, all []string
	for _, d := range denied {
		each = append(each, fmt.Sprintf("%s denies %s", d.Addr, strings.Join(d.Denied, ", ")))
		all = append(all, d.Denied...)
	}
	return fmt.Errorf("%w: %s; grant them on every node (ACL SETUSER %s %s, and save the ACL), or give the user exactly Apollo's rules (README, Redis rights)",
		ErrRedisRights, strings.Join(each, "; "), user, strings.Join(redisroute.Grants(all), " "))
}
