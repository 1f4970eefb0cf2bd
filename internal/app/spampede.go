package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
// picked up by every instance within RulesPollEvery.
type spampedeRules struct {
	filter   *spampede.Filter
	counters *redisstore.SpampedeCounters
	log      *slog.Logger
}

// load installs the stored rules; with none stored, it stores seed.
func (s spampedeRules) load(ctx context.Context, seed spampede.RuleSet) error {
	rs, ok, err := s.counters.LoadRules(ctx)
	if err != nil {
		return fmt.Errorf("load spampede rules: %w", err)
	}
	if !ok {
		return s.SaveRules(ctx, seed)
	}
	return s.filter.SetRules(rs)
}

// SaveRules validates, stores and applies a rule set.
func (s spampedeRules) SaveRules(ctx context.Context, rs spampede.RuleSet) error {
	if err := rs.Validate(); err != nil {
		return err
	}
	if rs.Version <= s.filter.Rules().Version {
		rs.Version = s.filter.Rules().Version + 1
	}
	raw, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	if err := s.counters.SaveRules(ctx, raw); err != nil {
		return err
	}
	return s.filter.SetRules(rs)
}

func (s spampedeRules) Rules() spampede.RuleSet { return s.filter.Rules() }

func (s spampedeRules) TrippedCells(now time.Time, top int) []spampede.CellState {
	return s.filter.TrippedCells(now, top)
}

// poll picks up rule changes made by other instances until stop closes.
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
		case ok && rs.Version != s.filter.Rules().Version:
			if err := s.filter.SetRules(rs); err == nil {
				s.log.Info("spampede rules updated", "version", rs.Version, "rules", len(rs.Rules))
			}
		}
	}
}
