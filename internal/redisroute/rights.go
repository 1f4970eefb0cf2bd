package redisroute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// What Apollo's Redis user must be allowed to run, checked before Apollo
// serves.
//
// A user narrowed the usual way (+@all -@dangerous, or a list of the
// data commands an application sends) connects, reads and writes, yet is
// denied INFO: every write that asks for replica acknowledgements then
// fails its proof (proof.go), and every confirmed read with it, on every
// node at once: no booking is ever created. Nothing says why until the
// first booking. So the rights are checked at start, on every node (an
// ACL is each node's own), without running anything: each command is
// queued in a transaction that is then discarded, and Redis checks a
// queued command's command, key and channel rights before it queues it.

// A Right is one command Apollo's user must be allowed to run, written as
// a harmless instance of it: its name (and subcommand), arguments Redis
// accepts (it checks the count before the rights), and a key or channel
// of Apollo's, so that an ACL's key and channel patterns meet it as they
// meet Apollo's own commands.
type Right []any

// Name is the command as an ACL rule names it: "info", "cluster|slots".
func (r Right) Name() string {
	if len(r) == 0 {
		return ""
	}
	name := strings.ToLower(fmt.Sprint(r[0]))
	if len(r) > 1 && slices.Contains(containers, name) {
		name += "|" + strings.ToLower(fmt.Sprint(r[1]))
	}
	return name
}

// containers are the commands Apollo sends whose ACL rules name a
// subcommand.
var containers = []string{"cluster", "client", "config", "script"}

// Apollo's keys and channels all begin with "apollo:" (the router's
// fences and probes, and redisstore's keys.go): the patterns of its user's
// ACL rules.
const (
	KeyPattern     = "apollo:*"
	ChannelPattern = "apollo:*"
)

// rightsKey and rightsChannel stand for Apollo's keys and channels in the
// check; nothing is ever written to them.
const (
	rightsKey     = "apollo:rights-check"
	rightsChannel = "apollo:rights-check"
)

// RouterRights are the commands the router itself sends, besides those of
// its callers.
func RouterRights() []Right {
	return []Right{
		{"MULTI"}, {"DISCARD"}, // this check
		{"CLUSTER", "SLOTS"},                // the slot map (refresh.go)
		{"ASKING"},                          // before a command redirected by ASK, while its slot moves
		{"CLUSTER", "NODES"},                // apollo check's view of the cluster (clustercheck)
		{"CLUSTER", "INFO"},                 // and of its state
		{"READONLY"},                        // each request connection, for replica reads
		{"INFO", "replication"},             // write proofs, restarts, memory and persistence checks
		{"WAIT", 0, 0},                      // writes and confirmed reads that ask for acknowledgements
		{"PING"},                            // probes of ejected and unreached nodes
		{"TIME"},                            // clock checks (skew.go)
		{"SET", rightsKey, "1"},             // fences of confirmed reads, barriers
		{"EXISTS", rightsKey},               // shard probes
		{"EVAL", "return 1", 1, rightsKey},  // a full node's fences (fence.go)
		{"DEL", rightsKey},                  // in that script
		{"SSUBSCRIBE", rightsChannel},       // subscriptions (subscribe.go)
		{"SUNSUBSCRIBE", rightsChannel},     // their end
		{"SPUBLISH", rightsChannel, "none"}, // callers' publications
	}
}

// NodeRights is what one node's ACL denies Apollo's user.
type NodeRights struct {
	Addr string
	// Denied names each command denied (as Right.Name), with "(keys)" or
	// "(channels)" when it is Apollo's keys or channels that are denied.
	Denied []string
	// Err says why the node could not be asked; Denied is then unknown.
	Err error
}

// CheckRights asks every node of the current topology, bounded by ctx,
// which of rights its ACL denies Apollo's user. Nodes that could not be
// asked (down, hung, refusing the credentials) are listed in unknown,
// each as its address and why.
func (r *Router) CheckRights(ctx context.Context, rights []Right) (denied []NodeRights, unknown []string) {
	for _, k := range r.askRights(ctx, rights) {
		switch {
		case k.Err != nil:
			unknown = append(unknown, fmt.Sprintf("%s (%v)", k.Addr, k.Err))
		case len(k.Denied) > 0:
			denied = append(denied, k)
		}
	}
	return denied, unknown
}

// askRights asks every node of the current topology which of rights it
// denies, through its reach pool: it sets nothing up on a connection
// (READONLY may be among the rights denied), and its dials are given the
// whole DialTimeout (the asks' are cut to fit a write's proof).
func (r *Router) askRights(ctx context.Context, rights []Right) []NodeRights {
	all, _ := askEveryNode(r.topo.Load(), func(n *node) (NodeRights, bool) {
		names, err := DeniedRights(ctx, n.reach, rights)
		return NodeRights{Addr: n.addr, Denied: names, Err: err}, true
	})
	return all
}

// checkRights, every RightsCheckInterval, exports how many of cfg.Rights
// each node of the slot map denies, and logs a node that starts or stops
// denying some: an ACL narrowed while Apollo runs (an ACL file loaded
// again, a rule pushed to the nodes) fails what needs the right on that
// node from then on, which the start's check cannot see. A node that does
// not answer keeps its last value. Bounded like the other node checks, so
// that Close waits for no more.
func (r *Router) checkRights() {
	ctx, cancel := context.WithTimeout(context.Background(), min(r.cfg.RightsCheckInterval, r.cfg.MemoryCheckInterval))
	defer cancel()
	asked := r.askRights(ctx, r.cfg.Rights)
	in := r.topo.Load().byAddr() // after the asks: a node that left meanwhile has no series, and gets none
	for addr := range r.rightsLast {
		if in[addr] == nil {
			delete(r.rightsLast, addr) // back later, it is new
		}
	}
	for _, k := range asked {
		if k.Err != nil || in[k.Addr] == nil {
			continue
		}
		r.m.rightsDenied.WithLabelValues(k.Addr).Set(float64(len(k.Denied)))
		now := strings.Join(k.Denied, ", ")
		switch last := r.rightsLast[k.Addr]; {
		case now != "" && now != last:
			r.log.Error("redis node denies Apollo's user commands it needs: what needs them fails on this node (without INFO, every acknowledged write); grant them",
				"node", k.Addr, "denied", now, "grant", strings.Join(Grants(k.Denied), " "))
		case now == "" && last != "":
			r.log.Info("redis node allows Apollo's user every command it needs again", "node", k.Addr)
		}
		r.rightsLast[k.Addr] = now
	}
}

// DeniedRights asks the node behind c which of rights its ACL denies c's
// user: each is queued in a transaction (MULTI), which is then discarded,
// so nothing runs. A user denied MULTI or DISCARD, the check's own,
// cannot be asked further: "multi" or "discard" is then the one denial
// named, as Apollo's rules grant them (a user narrowed to -@all +@read
// +@write, say, is denied both and INFO: not asking would let it start).
// An error means the node could not be asked.
func DeniedRights(ctx context.Context, c *redis.Client, rights []Right) ([]string, error) {
	// Discarded after, not put back in c's pool: cut short, or with its
	// DISCARD refused, it would be left in the transaction.
	cn := c.EphemeralConn()
	defer cn.Close()
	if err := cn.Do(ctx, "MULTI").Err(); err != nil {
		if isReply(err, "NOPERM ") {
			return []string{"multi"}, nil
		}
		return nil, fmt.Errorf("MULTI: %w", err)
	}
	var queued []*redis.Cmd
	var discard *redis.Cmd
	_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range rights {
			if name := r.Name(); name != "multi" && name != "discard" {
				queued = append(queued, p.Do(ctx, r...))
			}
		}
		discard = p.Do(ctx, "DISCARD")
		return nil
	})
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) {
		return nil, err
	}
	if err := discard.Err(); err != nil {
		// Nothing ran: a transaction whose DISCARD was refused is left
		// open, and the connection with it.
		if isReply(err, "NOPERM ") {
			return []string{"discard"}, nil
		}
		return nil, fmt.Errorf("DISCARD: %w", err)
	}
	var denied []string
	for _, q := range queued {
		if err := q.Err(); isReply(err, "NOPERM ") {
			denied = append(denied, deniedName(Right(q.Args()), err))
		}
	}
	return denied, nil
}

// deniedName names a denial as NodeRights.Denied does. Redis words a
// denied key or channel differently by version ("to access one of the
// keys used as arguments" before 7.2, "to access a key" since); a denied
// command names the command.
func deniedName(r Right, err error) string {
	msg := strings.ToLower(err.Error())
	if _, what, ok := strings.Cut(msg, "permissions to access "); ok {
		switch {
		case strings.Contains(what, "key"):
			return r.Name() + " (keys)"
		case strings.Contains(what, "channel"):
			return r.Name() + " (channels)"
		}
	}
	return r.Name()
}

// ACLRules are the rules of an ACL user with exactly rights, on Apollo's
// keys and channels (ACL SETUSER syntax, without the user's state and
// passwords).
func ACLRules(rights []Right) []string {
	rules := []string{"resetkeys", "~" + KeyPattern, "resetchannels", "&" + ChannelPattern, "-@all"}
	var seen []string
	for _, r := range rights {
		if name := r.Name(); !slices.Contains(seen, name) {
			seen = append(seen, name)
			rules = append(rules, "+"+name)
		}
	}
	return rules
}

// Grants are the rules that would give a user the rights named in denied
// (as NodeRights.Denied names them), on Apollo's keys and channels.
func Grants(denied []string) []string {
	var rules []string
	for _, d := range denied {
		var rule string
		switch name, what, _ := strings.Cut(d, " "); what {
		case "(keys)":
			rule = "~" + KeyPattern
		case "(channels)":
			rule = "&" + ChannelPattern
		default:
			rule = "+" + name
		}
		if !slices.Contains(rules, rule) {
			rules = append(rules, rule)
		}
	}
	return rules
}
