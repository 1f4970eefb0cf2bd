package fleet

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	owned   prometheus.Gauge
	members prometheus.Gauge
	changes *prometheus.CounterVec
	errors  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (metrics, error) {
	m := metrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apollo_fleet_partitions_owned",
			Help: "Open-bookings partitions this instance holds the lease of."}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apollo_fleet_members",
			Help: "Live instances this instance saw at its last rebalance."}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_fleet_lease_changes_total",
			Help: "Partition leases acquired, released (handed back) and lost (expired or taken)."}, []string{"change"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apollo_fleet_lease_errors_total",
			Help: "Lease operations that failed (Redis unreachable, refused): renew (a batch), acquire (a partition)."}, []string{"op"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.owned, m.members, m.changes, m.errors} {
		if err := reg.Register(c); err != nil {
			return m, err
		}
	}
	return m, nil
}
