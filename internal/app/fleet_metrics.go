package app

import "github.com/prometheus/client_golang/prometheus"

// fleetMetrics is fleet.Metrics on Prometheus.
type fleetMetrics struct {
	owned   prometheus.Gauge
	members prometheus.Gauge
	changes *prometheus.CounterVec
	errors  *prometheus.CounterVec
}

func newFleetMetrics(reg prometheus.Registerer, partitions int) (*fleetMetrics, error) {
	count := prometheus.NewGauge(prometheus.GaugeOpts{Name: "apollo_fleet_partitions",
		Help: "Open-bookings partitions of the fleet (--partitions): what apollo_fleet_partitions_owned sums to over the instances."})
	count.Set(float64(partitions))
	if err := reg.Register(count); err != nil {
		return nil, err
	}
	m := &fleetMetrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apollo_fleet_partitions_owned",
			Help: "Open-bookings partitions this instance holds the lease of."}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apollo_fleet_members",
			Help: "Live instances this instance saw at its last rebalance."}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_fleet_lease_changes_total",
			Help: "Partition leases acquired, released (handed back) and lost (expired or taken)."}, []string{"change"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_fleet_lease_errors_total",
			Help: "Lease operations that failed (Redis unreachable, refused): renew (a batch), acquire (a partition)."}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{m.owned, m.members, m.changes, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *fleetMetrics) Owned(n int)             { m.owned.Set(float64(n)) }
func (m *fleetMetrics) Members(n int)           { m.members.Set(float64(n)) }
func (m *fleetMetrics) Changed(change string)   { m.changes.WithLabelValues(change).Inc() }
func (m *fleetMetrics) Failed(op string, n int) { m.errors.WithLabelValues(op).Add(float64(n)) }
