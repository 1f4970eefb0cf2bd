// Package clustercheck inspects a live Redis Cluster and answers "is it
// exposed to the 2019 failure?": topology, replication health, per-node
// read latency, and the settings that decide how long a dead replica keeps
// being advertised and whether reads survive a failover; and, on every node,
// whether Apollo's credentials work and whether the ACL users agree.
package clustercheck
