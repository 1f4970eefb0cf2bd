package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/redisroute"
)

// The instances' reach (fleet.Reach), one copy on every shard so that an
// instance that reaches any shard reads everyone's:
//
//	apollo:fleet:reach:{n}   hash   instance → "<slot ranges> <primaries> <at ms> <until ms>"
//
// with the primaries' addresses joined by commas ("-" for none).
//
// A hash no instance writes any more (its shard's key changed with a
// reshard) expires after reachKeyLife.
const reachPrefix = "apollo:fleet:reach:"

const reachKeyLife = time.Minute

// reachScript sets field ARGV[1] to ARGV[2], drops the fields whose report
// ran out by the node's clock (not the writer's: a writer whose clock is
// far ahead would drop everyone's), and keeps the hash ARGV[3] ms.
const reachScript = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local ends = tonumber(string.match(all[i + 1], '(%d+)$'))
  if ends == nil or ends < now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`

// Reaches implements fleet.ReachStore on Redis. Reports are plain writes,
// not acknowledged: a report lost in a failover is made again a second
// later.
type Reaches struct {
	r      shardRouter
	report script
}

// shardRouter is a router that names a key on each shard.
type shardRouter interface {
	router
	ShardKeys(prefix string) []string
}

// NewReaches returns the reach store over r.
func NewReaches(r shardRouter) *Reaches { return &Reaches{r: r, report: newScript(reachScript)} }

var _ fleet.ReachStore = (*Reaches)(nil)

// ReportReach implements fleet.ReachStore: written on every shard; an
// error only when no shard took it.
func (s *Reaches) ReportReach(ctx context.Context, r fleet.ReachReport) error {
	val := formatReach(r)
	var cmds []redisroute.Cmd
	for _, k := range s.r.ShardKeys(reachPrefix) {
		cmds = append(cmds, s.report.cmd(k, r.ID, val, reachKeyLife.Milliseconds()))
	}
	var errs []error
	for _, res := range s.report.exec(ctx, s.r, cmds) {
		if res.Err == nil {
			return nil
		}
		errs = append(errs, storeErr(res.Err))
	}
	return errors.Join(errs...)
}

// ForgetReach implements fleet.ReachStore: from every shard; an error
// when some shard did not take it (its copy runs out with its Until).
func (s *Reaches) ForgetReach(ctx context.Context, id string) error {
	var cmds []redisroute.Cmd
	for _, k := range s.r.ShardKeys(reachPrefix) {
		cmds = append(cmds, redisroute.Write("HDEL", k, id))
	}
	return storeErr(s.r.Exec(ctx, cmds).Err())
}

// Reaches implements fleet.ReachStore: each instance's latest report, from
// whichever shards answer; an error only when none does.
func (s *Reaches) Reaches(ctx context.Context, now time.Time) ([]fleet.ReachReport, error) {
	var cmds []redisroute.Cmd
	for _, k := range s.r.ShardKeys(reachPrefix) {
		cmds = append(cmds, redisroute.Read("HGETALL", k))
	}
	latest := map[string]fleet.ReachReport{}
	var errs []error
	answered := false
	for _, res := range s.r.Exec(ctx, cmds) {
		if res.Err != nil {
			errs = append(errs, storeErr(res.Err))
			continue
		}
		answered = true
		for id, raw := range hashOf(res.Val) {
			rep, err := parseReach(id, raw)
			if err != nil || !rep.Until.After(now) {
				continue
			}
			if l, ok := latest[id]; !ok || rep.At.After(l.At) {
				latest[id] = rep
			}
		}
	}
	if !answered {
		return nil, errors.Join(errs...)
	}
	out := make([]fleet.ReachReport, 0, len(latest))
	for _, r := range latest {
		out = append(out, r)
	}
	return out, nil
}

// formatReach is how ReportReach stores r (parseReach reads it back).
func formatReach(r fleet.ReachReport) string {
	primaries := strings.Join(r.Primaries, ",")
	if primaries == "" {
		primaries = "-"
	}
	return fmt.Sprintf("%s %s %d %d", r.Slots, primaries, r.At.UnixMilli(), r.Until.UnixMilli())
}

// parseReach reads a report written by formatReach.
func parseReach(id, raw string) (fleet.ReachReport, error) {
	f := strings.Fields(raw)
	if len(f) != 4 {
		return fleet.ReachReport{}, fmt.Errorf("reach report %q: want 4 fields", raw)
	}
	slots, err := fleet.ParseSlotSet(f[0])
	if err != nil {
		return fleet.ReachReport{}, fmt.Errorf("reach report %q: %w", raw, err)
	}
	var primaries []string
	if f[1] != "-" {
		primaries = strings.Split(f[1], ",")
		if slices.Contains(primaries, "") {
			return fleet.ReachReport{}, fmt.Errorf("reach report %q: an empty primary address", raw)
		}
	}
	var n [2]int64
	for i, s := range f[2:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fleet.ReachReport{}, fmt.Errorf("reach report %q: %w", raw, err)
		}
		n[i] = v
	}
	return fleet.ReachReport{ID: id, Slots: slots, Primaries: primaries, At: time.UnixMilli(n[0]), Until: time.UnixMilli(n[1])}, nil
}

// hashOf is an HGETALL reply (RESP2: field, value, …) as a map.
func hashOf(v any) map[string]string {
	flat, _ := v.([]any)
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		m[k] = val
	}
	return m
}
