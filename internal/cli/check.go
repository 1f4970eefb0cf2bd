package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/clustercheck"
	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

const checkSynopsis = `check --redis-addrs host:port[,...] [--json]

Inspect a Redis Cluster for the risks behind the 2019 incident: topology,
failed or failing nodes, replication links and lag, slot coverage, each node's
read latency, and the settings that decide how long a dead replica is still
advertised. The configured credentials are tried on every node: one that
refuses them is critical, as is one whose ACL denies Apollo's user a command
it needs (apollo serve refuses to start then; README, Redis rights); one open
without a password, and nodes whose ACL users or rules for Apollo's user
differ, are warnings.
Exit code: 0 ok, 1 warnings, 2 critical (usable in CI).`

func runCheck(ctx context.Context, e env, args []string) error {
	rc := redisroute.DefaultConfig()
	fs := newFlagSet(e, "check", checkSynopsis)
	flags := rc.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", time.Second, "timeout of each probe")
	printRules := fs.Bool("print-acl-rules", false, "print the ACL SETUSER rules of a Redis user with exactly the rights Apollo needs (Redis 7.0 or later), on one line, and exit (no Redis is asked): apollo check --print-acl-rules | xargs redis-cli -h NODE ACL SETUSER apollo on '>PASSWORD', on every node, then ACL SAVE or CONFIG REWRITE")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *printRules {
		fmt.Fprintln(e.stdout, strings.Join(redisstore.ACLRules(), " "))
		return nil
	}
	if err := flags.Apply(&rc); err != nil {
		return usageError{err}
	}
	if len(rc.Addrs) == 0 {
		return usageError{fmt.Errorf("--redis-addrs is required")}
	}
	rep, err := clustercheck.Run(ctx, clustercheck.Options{Addrs: rc.Addrs, Username: rc.Username, Password: rc.Password,
		TLS: rc.TLS, SourceAddr: rc.SourceAddr, ReadPolicy: string(rc.Policy), Timeout: *timeout, Rights: redisstore.Rights()})
	if err != nil {
		return exitCodeError{int(clustercheck.Critical), err}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
	} else {
		clustercheck.WriteText(e.stdout, rep)
	}
	if rep.Status != clustercheck.Info {
		return silentExit{int(rep.Status)}
	}
	return nil
}
