package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/redisroute"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// spampedeMetrics is the filter's Observer on the service's registry.
// Labels are bounded: outcomes only, never cells.
type spampedeMetrics struct {
	decisions     *prometheus.CounterVec
	trips         prometheus.Counter
	recordFailing prometheus.Counter
}

func newSpampedeMetrics(reg prometheus.Registerer) (*spampedeMetrics, error) {
	m := &spampedeMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_spampede_decisions_total",
			Help: "Admission decisions by outcome (admitted, rejected, rejected_cached, shadow_rejected, fail_open, no_rule)."}, []string{"outcome"}),
		trips:         prometheus.NewCounter(prometheus.CounterOpts{Name: "apollo_spampede_trips_total", Help: "Cells tripped."}),
		recordFailing: prometheus.NewCounter(prometheus.CounterOpts{Name: "apollo_spampede_record_failures_total", Help: "Unallocated bookings that could not be counted."}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.trips, m.recordFailing} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, o := range spampede.Outcomes() {
		m.decisions.WithLabelValues(string(o))
	}
	return m, nil
}

func (m *spampedeMetrics) Decided(o spampede.Outcome) { m.decisions.WithLabelValues(string(o)).Inc() }
func (m *spampedeMetrics) Tripped()                   { m.trips.Inc() }
func (m *spampedeMetrics) RecordFailed()              { m.recordFailing.Inc() }

// spampedeRules keeps every instance's filter on the rule set stored in
// Redis, as Grab did: edits through the admin API are saved there and
// picked up by every instance within RulesPollEvery. Saves compare
// versions, so two edits of one version cannot both win, and polling
// installs whatever is stored whenever it differs from what is in force,
// so instances converge even after a failover lost a save.
type spampedeRules struct {
	filter   *spampede.Filter
	counters *redisstore.SpampedeCounters
	log      *slog.Logger
}

// load installs the stored rules; with none stored, it stores seed as it
// is (its own version) unless another instance has just stored one.
func (s spampedeRules) load(ctx context.Context, seed spampede.RuleSet) error {
	rs, ok, err := s.counters.LoadRules(ctx)
	if err != nil {
		return fmt.Errorf("load spampede rules: %w", err)
	}
	if !ok {
		if rs, err = s.seed(ctx, seed); err != nil {
			return err
		}
	}
	return s.filter.SetRules(rs)
}

// seed stores the seed rule set in an empty store and returns what is
// stored. An unconfirmed seed is not an error: it is no operator's edit,
// and any instance that starts after a failover lost it stores it again;
// so a cluster without replicas still starts.
func (s spampedeRules) seed(ctx context.Context, seed spampede.RuleSet) (spampede.RuleSet, error) {
	if err := seed.Validate(); err != nil {
		return seed, err
	}
	raw, err := json.Marshal(seed)
	if err != nil {
		return seed, err
	}
	rs, err := s.counters.SeedRules(ctx, raw)
	if errors.Is(err, redisroute.ErrUnconfirmed) {
		s.log.Warn("spampede seed rules not confirmed by a replica", "version", rs.Version, "err", err)
		err = nil
	}
	if err != nil {
		return seed, fmt.Errorf("seed spampede rules: %w", err)
	}
	return rs, nil
}

// SaveRules validates rs, an edit of the rule set of version rs.Version,
// stores it for every instance as version rs.Version+1 if rs.Version is
// still the stored version, and applies it here. Saving the same edit
// again succeeds (a retry is safe).
//
//   - Another save got there first: redisstore.ErrRulesConflict. The stored
//     rules are installed here, so that GET shows what to edit again.
//   - No replica confirmed the save in time: the rules are stored on the
//     primary and in force here (every instance will pick them up), but a
//     failover may still lose them, so the save is not reported done: it
//     is redisstore.ErrUnavailable, and saving the same edit again
//     confirms it. redisroute.ErrUnconfirmed is left out of the chain on
//     purpose: the HTTP edge reads it as an unconfirmed booking.
func (s spampedeRules) SaveRules(ctx context.Context, rs spampede.RuleSet) error {
	if err := rs.Validate(); err != nil {
		return err
	}
	rs.Version++
	raw, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	err = s.counters.SaveRules(ctx, raw)
	switch {
	case errors.Is(err, redisstore.ErrRulesConflict):
		if stored, ok, lerr := s.counters.LoadRules(ctx); lerr == nil && ok {
			s.install(stored)
		}
		return err
	case errors.Is(err, redisroute.ErrUnconfirmed):
		s.install(rs)
		return fmt.Errorf("%w: spampede rules version %d are stored on the primary but not confirmed by a replica; save them again (%v)",
			redisstore.ErrUnavailable, rs.Version, err)
	case err != nil:
		return err
	}
	return s.filter.SetRules(rs)
}

// install puts rs in force unless it already is (same version, same
// content); it reports whether it changed anything.
func (s spampedeRules) install(rs spampede.RuleSet) bool {
	if sameRules(rs, s.filter.Rules()) {
		return false
	}
	if err := s.filter.SetRules(rs); err != nil {
		s.log.Warn("spampede rules not installed", "version", rs.Version, "err", err)
		return false
	}
	return true
}

// sameRules compares two rule sets as the documents they are stored as.
func sameRules(a, b spampede.RuleSet) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func (s spampedeRules) Rules() spampede.RuleSet { return s.filter.Rules() }

func (s spampedeRules) TrippedCells(now time.Time, top int) []spampede.CellState {
	return s.filter.TrippedCells(now, top)
}

// poll installs the stored rules whenever they differ from those in force
// (in version or in content) until stop closes: so instances converge on
// what is stored, whoever saved it.
func (s spampedeRules) poll(every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		rs, ok, err := s.counters.LoadRules(ctx)
		cancel()
		switch {
		case err != nil:
			s.log.Warn("poll spampede rules", "err", err)
		case ok && s.install(rs):
			s.log.Info("spampede rules updated", "version", rs.Version, "rules", len(rs.Rules))
		}
	}
}
