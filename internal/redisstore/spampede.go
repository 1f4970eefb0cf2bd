package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Spampede counter keys: apollo:spm:{<service>:<cell>}:<bucket>. A cell's
// buckets share a hash tag, so the current and previous bucket are read
// with one MGET on one node.
func spampedeKey(k spampede.Key, bucket int64) string {
	return "apollo:spm:{" + k.String() + "}:" + strconv.FormatInt(bucket, 10)
}

// spampedeRulesKey holds the rule set as JSON, shared by every instance.
// The document's own "version" is the version compared on save.
const spampedeRulesKey = "apollo:spm:rules"

// rulesAcks replicas must acknowledge a rule save (WAIT) before it is
// reported done, so that a save reported done survives a failover.
const rulesAcks = 1

// ErrRulesConflict: a rule set was saved as the successor of a version
// that is no longer the stored one. Reload, reapply the edit, save again.
var ErrRulesConflict = fmt.Errorf("spampede rules changed since the version edited: %w", ErrConflict)

// saveRulesScript is SaveRules' compare-and-set. A stored value that is
// not a rule set document (no numeric version) counts as none, so that a
// save can repair it. Rewriting an identical document is a repeat: it is
// written again so that this connection's WAIT covers it.
// KEYS[1] rules key; ARGV[1] document; ARGV[2] its version.
// Returns {1, version} when written or {0, stored version}.
const saveRulesScript = `
local cur = redis.call('GET', KEYS[1])
local v = tonumber(ARGV[2])
if cur and cur ~= ARGV[1] then
  local ok, doc = pcall(cjson.decode, cur)
  local stored = ok and type(doc) == 'table' and tonumber(doc.version)
  if stored and stored + 1 ~= v then return {0, stored} end
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, v}
`

// incrScript counts ARGV[2] unallocated bookings and makes sure the
// counter expires: EXPIRE ... NX sets the TTL on the first increment and
// repairs a key that somehow has none, in the same atomic step.
const incrScript = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[1], 'NX')
return n
`

// SpampedeCounters implements spampede.Store on Redis.
type SpampedeCounters struct {
	r         router
	incr      script
	saveRules script
}

// NewSpampedeCounters returns the Redis counter store of the Spampede filter.
func NewSpampedeCounters(r router) *SpampedeCounters {
	return &SpampedeCounters{r: r, incr: newScript(incrScript), saveRules: newScript(saveRulesScript)}
}

// Counts reads a cell's current and previous bucket in one command.
func (s *SpampedeCounters) Counts(ctx context.Context, k spampede.Key, bucket int64) (cur, prev int64, err error) {
	key := spampedeKey(k, bucket)
	res := s.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"MGET", key, spampedeKey(k, bucket-1)}, Key: key}})[0]
	if res.Err != nil {
		return 0, 0, storeErr(res.Err)
	}
	vals, ok := res.Val.([]any)
	if !ok || len(vals) != 2 {
		return 0, 0, fmt.Errorf("spampede counts: unexpected reply %v", res.Val)
	}
	return toInt(vals[0]), toInt(vals[1]), nil
}

func toInt(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Record adds n to every key's bucket in one pipeline, one script per key.
func (s *SpampedeCounters) Record(ctx context.Context, keys []spampede.Key, bucket, n int64, ttl time.Duration) error {
	secs := max(int64(ttl/time.Second), 1)
	cmds := make([]redisroute.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = s.incr.cmd(spampedeKey(k, bucket), secs, n)
	}
	var errs []error
	for _, r := range s.incr.exec(ctx, s.r, cmds) {
		if r.Err != nil {
			errs = append(errs, storeErr(r.Err))
		}
	}
	return errors.Join(errs...)
}

// LoadRules reads the shared rule set from the primary; ok is false when
// none is stored.
func (s *SpampedeCounters) LoadRules(ctx context.Context) (rs spampede.RuleSet, ok bool, err error) {
	res := s.r.Exec(ctx, []redisroute.Cmd{{Args: []any{"GET", spampedeRulesKey}, Key: spampedeRulesKey, Fresh: true}})[0]
	if res.Err != nil {
		return rs, false, storeErr(res.Err)
	}
	raw, isStr := res.Val.(string)
	if !isStr {
		return rs, false, nil
	}
	rs, err = spampede.ParseRuleSet([]byte(raw))
	return rs, err == nil, err
}

// SaveRules stores raw, a rule set document of version v, for every
// instance by compare-and-set: it replaces only the document of version
// v-1 (or an empty store), so two edits of one version cannot both be
// saved. Saving the stored document again succeeds, which makes a retry
// safe. Errors:
//   - ErrRulesConflict (an ErrConflict): another document is stored; its
//     version is in the message. Nothing was written.
//   - ErrUnavailable wrapping redisroute.ErrUnconfirmed: the document is
//     stored on the primary, and every instance reads it from there, but no
//     replica acknowledged it in time, so a failover may still lose it.
//     Saving it again repeats the write and waits for a replica again. On
//     a cluster without replicas every save ends so.
func (s *SpampedeCounters) SaveRules(ctx context.Context, raw []byte) error {
	rs, err := spampede.ParseRuleSet(raw)
	if err != nil {
		return err
	}
	c := s.saveRules.cmd(spampedeRulesKey, string(raw), rs.Version)
	c.Acks = rulesAcks
	res := s.saveRules.exec(ctx, s.r, []redisroute.Cmd{c})[0]
	// An unconfirmed reply is still a reply: a conflict wrote nothing, so
	// it is a conflict whatever the replicas said.
	if reply, _ := res.Val.([]any); len(reply) == 2 {
		if written, _ := reply[0].(int64); written == 0 {
			stored, _ := reply[1].(int64)
			return fmt.Errorf("%w: version %d is stored, so version %d cannot replace it", ErrRulesConflict, stored, rs.Version)
		}
	} else if res.Err == nil {
		return fmt.Errorf("save spampede rules: unexpected reply %v", res.Val)
	}
	if res.Err != nil {
		return storeErr(res.Err)
	}
	return nil
}

// SeedRules stores raw, a rule set document, only if none is stored, and
// returns the rule set stored afterwards: raw's or the one found. An
// unconfirmed write is reported as SaveRules reports it.
func (s *SpampedeCounters) SeedRules(ctx context.Context, raw []byte) (spampede.RuleSet, error) {
	rs, err := spampede.ParseRuleSet(raw)
	if err != nil {
		return rs, err
	}
	c := redisroute.Write("SET", spampedeRulesKey, string(raw), "NX", "GET")
	c.Acks = rulesAcks
	res := s.r.Exec(ctx, []redisroute.Cmd{c})[0]
	if found, ok := res.Val.(string); ok {
		return spampede.ParseRuleSet([]byte(found))
	}
	if res.Err != nil {
		return rs, storeErr(res.Err)
	}
	return rs, nil
}
