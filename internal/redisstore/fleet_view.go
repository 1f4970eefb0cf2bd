package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
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
	// Created is when each of its first-due open bookings was created, up
	// to View's sample per partition: all of them when Open is no more.
	Created []time.Time `json:"-"`
	// Unread: its shard did not answer; the other fields are empty.
	Unread bool `json:"unread,omitempty"`
}

// viewSample bounds the bookings View reads the creation time of, over
// all partitions: it runs once a second while a console page is open.
const viewSample = 512

// View reads every partition's owner, open bookings, next due time and
// the creation time of up to viewSample/partitions (at least one) of its
// first-due open bookings: two pipelines, for an operator's page, not a hot
// path. A partition whose shard does not answer is marked Unread and the
// error says how many were; the others are read all the same.
func (f *Fleet) View(ctx context.Context) ([]PartitionView, error) {
	n := f.ps.Count()
	if n == 0 {
		return nil, nil
	}
	k := max(1, viewSample/n)
	cmds := make([]redisroute.Cmd, 0, 3*n)
	for p := range n {
		cmds = append(cmds, redisroute.Read("GET", f.ps.leaseKey(p)), redisroute.Read("ZCARD", f.ps.OpenKey(p)),
			redisroute.Read("ZRANGE", f.ps.OpenKey(p), 0, k-1, "WITHSCORES"))
	}
	res := f.r.Exec(ctx, cmds)
	out := make([]PartitionView, n)
	var ids []string
	var of []int // the partition of each of ids
	unread, firstErr := 0, error(nil)
	for p := range n {
		if err := errors.Join(res[3*p].Err, res[3*p+1].Err, res[3*p+2].Err); err != nil {
			out[p] = PartitionView{Partition: p, Unread: true}
			unread++
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		open, _ := res[3*p+1].Val.(int64) // ZCARD's integer reply
		v := PartitionView{Partition: p, Open: open}
		if lease, ok := res[3*p].Val.(string); ok {
			v.Owner = leaseOwner(lease)
		}
		first, _ := res[3*p+2].Val.([]any)
		for i := 0; i+1 < len(first); i += 2 {
			if i == 0 {
				if ms, err := strconv.ParseFloat(fmt.Sprint(first[1]), 64); err == nil && ms > 0 {
					v.NextDue = time.UnixMilli(int64(ms))
				}
			}
			if id, ok := first[i].(string); ok {
				ids, of = append(ids, id), append(of, p)
			}
		}
		out[p] = v
	}
	f.created(ctx, out, ids, of)
	if unread > 0 {
		return out, fmt.Errorf("%d of %d partitions unread: %w", unread, n, storeErr(firstErr))
	}
	return out, nil
}

// created fills in the creation times of the bookings ids (of partitions
// of); a booking that ended meanwhile, or whose shard did not answer, is
// left out.
func (f *Fleet) created(ctx context.Context, out []PartitionView, ids []string, of []int) {
	if len(ids) == 0 {
		return
	}
	cmds := make([]redisroute.Cmd, len(ids))
	for i, id := range ids {
		cmds[i] = redisroute.Read("HGET", bookingKey(id), "json")
	}
	for i, r := range f.r.Exec(ctx, cmds) {
		raw, _ := r.Val.(string)
		var b struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if raw != "" && json.Unmarshal([]byte(raw), &b) == nil && !b.CreatedAt.IsZero() {
			out[of[i]].Created = append(out[of[i]].Created, b.CreatedAt)
		}
	}
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
