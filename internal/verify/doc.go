// Package verify checks Apollo's guarantees from recorded histories, the
// way Jepsen and etcd's robustness suite check databases: a workload of
// riders and drivers acts only through Apollo's public HTTP API, a nemesis
// injects faults, every operation is recorded with its invocation and
// response times and its outcome (ok, failed, or unknown when it may or may
// not have taken effect), and a checker looks for a history that breaks a
// guarantee: per driver and per booking with porcupine (linearizability,
// unknown outcomes treated as "may or may not have happened"), and across
// them with audits of what porcupine cannot see (a driver held by two open
// bookings, a created booking lost, a reservation no booking holds).
package verify
