package spike

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apollo-platform/apollo/internal/fleet"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/redisstore"
)

// CrashResult is what became of the work of the instance crashed in the
// instance-crash variant.
type CrashResult struct {
	AtS        float64 `json:"at_s"`         // when it crashed, since the run began
	RestartS   float64 `json:"restart_s"`    // when it came back
	Partitions int     `json:"partitions"`   // partitions it held
	LeaseS     float64 `json:"lease_s"`      // the lease time
	Open       int     `json:"open"`         // its open bookings at the crash
	Reclaimed  int     `json:"reclaimed"`    // of those, worked again (claimed, rescheduled or ended) after the crash
	DueByLease int     `json:"due_by_lease"` // of those, due or claimed by the time its leases ran out
	MaxAfterS  float64 `json:"max_after_s"`  // the longest wait from the crash until one of those was worked again
	Late       int     `json:"late"`         // worked again more than 1 s after the later of its due time and the lease's end, or never
	Overdue    int     `json:"overdue"`      // admitted bookings of the run still searching past their deadline at its end
}

// crashOne crashes the last instance at `at`, follows its partitions'
// bookings until each was claimed again, restarts it `for` later, and
// reports.
func crashOne(ctx context.Context, cfg Config, in *instances, c *localcluster.Cluster, start time.Time) (*CrashResult, error) {
	if err := sleep(ctx, time.Until(start.Add(cfg.CrashAt))); err != nil {
		return nil, err
	}
	lease := fleet.DefaultConfig().LeaseTTL
	ps, err := redisstore.NewPartitions(fleet.DefaultConfig().Partitions)
	if err != nil {
		return nil, err
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rc.Close()
	k := cfg.Instances - 1
	crashed := time.Now()
	parts := in.crash(k)
	res := &CrashResult{AtS: crashed.Sub(start).Seconds(), Partitions: len(parts), LeaseS: lease.Seconds()}
	snap, err := readScores(ctx, rc, ps, parts)
	if err != nil {
		return res, fmt.Errorf("read the crashed instance's partitions: %w", err)
	}
	// Each of its open bookings is due at its score: one it had claimed
	// at the claim's end (within the lease time), one waiting for a retry
	// or a driver's answer at that time. Each must be worked again within
	// 1 s of the later of its due time and the end of the dead leases.
	res.Open = len(snap)
	leaseEnd := crashed.Add(lease)
	pending, limit := map[string]float64{}, map[string]time.Time{}
	var last time.Time
	for id, score := range snap {
		pending[id] = score
		due := time.UnixMilli(int64(score))
		if !due.After(leaseEnd) {
			res.DueByLease++
		}
		limit[id] = due
		if limit[id].Before(leaseEnd) {
			limit[id] = leaseEnd
		}
		if limit[id].After(last) {
			last = limit[id]
		}
	}
	restartAt, restarted := crashed.Add(cfg.CrashFor), false
	// restart brings the instance back at restartAt (waiting if early).
	restart := func() error {
		if err := sleep(ctx, time.Until(restartAt)); err != nil {
			return err
		}
		if err := in.start(ctx, k); err != nil {
			return fmt.Errorf("restart the crashed instance: %w", err)
		}
		res.RestartS, restarted = time.Since(start).Seconds(), true
		return nil
	}
	deadline := last.Add(lease + 10*time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
		now, err := readScores(ctx, rc, ps, parts)
		if err != nil {
			continue
		}
		for id, was := range pending {
			if score, ok := now[id]; !ok || score != was {
				res.Reclaimed++
				if was <= float64(leaseEnd.UnixMilli()) {
					res.MaxAfterS = max(res.MaxAfterS, time.Since(crashed).Seconds())
				}
				if time.Since(limit[id]) > time.Second {
					res.Late++
				}
				delete(pending, id)
			}
		}
		if !restarted && time.Now().After(restartAt) {
			if err := restart(); err != nil {
				return res, err
			}
		}
	}
	res.Late += len(pending)
	if !restarted {
		if err := restart(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// readScores reads the open bookings of the partitions with their scores.
func readScores(ctx context.Context, rc *redis.ClusterClient, ps redisstore.Partitions, parts []int) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range parts {
		zs, err := rc.ZRangeWithScores(ctx, ps.OpenKey(p), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		for _, z := range zs {
			if id, ok := z.Member.(string); ok {
				out[id] = z.Score
			}
		}
	}
	return out, nil
}
