package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// PartitionView is one partition of the open-bookings index as Redis
// holds it now, for the console.
type PartitionView struct {
	Partition int    `json:"partition"`
	Owner     string `json:"owner"` // the instance holding its lease; empty when nobody does
	Open      int64  `json:"open"`  // open bookings
	// NextDue is when its earliest open booking is due to be worked
	// (retried, or given up); zero when none is open. Long past means
	// nobody is working the partition.
	NextDue time.Time `json:"next_due,omitzero"`
}

// View reads every partition's owner, open bookings and next due time:
// three commands a partition, in one pipeline. It is for an operator's
// page, not a hot path.
func (f *Fleet) View(ctx context.Context) ([]PartitionView, error) {
	n := f.ps.Count()
	cmds := make([]redisroute.Cmd, 0, 3*n)
	for p := range n {
		cmds = append(cmds, redisroute.Read("GET", f.ps.leaseKey(p)), redisroute.Read("ZCARD", f.ps.OpenKey(p)),
			redisroute.Read("ZRANGE", f.ps.OpenKey(p), 0, 0, "WITHSCORES"))
	}
	res := f.r.Exec(ctx, cmds)
	if err := res.Err(); err != nil {
		return nil, storeErr(err)
	}
	out := make([]PartitionView, n)
	for p := range n {
		v := PartitionView{Partition: p, Open: anyInt(res[3*p+1].Val)}
		if lease, ok := res[3*p].Val.(string); ok {
			v.Owner = leaseOwner(lease)
		}
		if first, ok := res[3*p+2].Val.([]any); ok && len(first) == 2 {
			if ms, err := strconv.ParseFloat(fmt.Sprint(first[1]), 64); err == nil && ms > 0 {
				v.NextDue = time.UnixMilli(int64(ms))
			}
		}
		out[p] = v
	}
	return out, nil
}

// leaseOwner is the instance of a lease value "<instance>:<fence>".
func leaseOwner(lease string) string {
	if i := strings.LastIndexByte(lease, ':'); i >= 0 {
		return lease[:i]
	}
	return lease
}

// announceKey holds what an instance tells the others about itself.
func announceKey(id string) string { return "apollo:fleet:about:{" + id + "}" }

// Announce stores what instance id says about itself (JSON, from the
// console: the rules version in force, say) for ttl, so that it vanishes
// with the instance.
func (f *Fleet) Announce(ctx context.Context, id string, about []byte, ttl time.Duration) error {
	return storeErr(f.r.Exec(ctx, []redisroute.Cmd{redisroute.Write("SET", announceKey(id), about, "PX", ttl.Milliseconds())}).Err())
}

// Announcements returns what each of ids announced and has not expired;
// an id with nothing announced is left out.
func (f *Fleet) Announcements(ctx context.Context, ids []string) (map[string][]byte, error) {
	cmds := make([]redisroute.Cmd, len(ids))
	for i, id := range ids {
		cmds[i] = redisroute.Read("GET", announceKey(id))
	}
	res := f.r.Exec(ctx, cmds)
	out := make(map[string][]byte, len(ids))
	var firstErr error
	for i, r := range res {
		if r.Err != nil {
			if firstErr == nil {
				firstErr = r.Err
			}
			continue
		}
		if s, ok := r.Val.(string); ok {
			out[ids[i]] = []byte(s)
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, storeErr(firstErr)
	}
	return out, nil
}

// anyInt is an integer reply (or its text) as an int64; 0 otherwise.
func anyInt(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	return toInt(v)
}
