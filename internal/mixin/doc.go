// Package mixin is Apollo's monitoring mixin, kept in monitoring/ at the
// repository's root: the Prometheus alerting and recording rules (YAML,
// with promtool unit tests) and the Grafana dashboard, which this package
// builds from Go (Dashboard) so that its panels and the rules read the same
// metrics. Its tests check the rules with promtool, compare the dashboard
// with its committed JSON, and run a real Prometheus that scrapes
// `apollo dev` and evaluates every rule.
package mixin
