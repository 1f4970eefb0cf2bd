// Package localcluster starts and stops throwaway Redis Clusters made of real
// redis-server processes on free loopback ports, and injects faults into their
// nodes (crash, hang, resume, restart).
//
// Everything in Apollo that talks to Redis is tested against a cluster from
// this package rather than a mock: the failures Apollo exists to survive (a
// dead or hung replica, a failover, a reshard) only happen in a real cluster.
package localcluster
