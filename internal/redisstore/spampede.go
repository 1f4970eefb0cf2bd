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
const spampedeRulesKey = "apollo:spm:rules"

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
	r    router
	incr script
}

// NewSpampedeCounters returns the Redis counter store of the Spampede filter.
func NewSpampedeCounters(r router) *SpampedeCounters {
	return &SpampedeCounters{r: r, incr: newScript(incrScript)}
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

// LoadRules reads the shared rule set; ok is false when none is stored.
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

// SaveRules stores the rule set for every instance.
func (s *SpampedeCounters) SaveRules(ctx context.Context, raw []byte) error {
	c := redisroute.Write("SET", spampedeRulesKey, string(raw))
	c.Acks = 1
	if err := s.r.Exec(ctx, []redisroute.Cmd{c})[0].Err; err != nil && !errors.Is(err, redisroute.ErrUnconfirmed) {
		return storeErr(err)
	}
	return nil
}
