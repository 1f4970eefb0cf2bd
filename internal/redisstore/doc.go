// Package redisstore keeps Apollo's domain state in Redis Cluster: drivers
// as hashes changed only by atomic Lua scripts, a geo index per coarse cell
// for nearby search, and the batch availability read of the 2019 incident.
//
// It knows the domain and the key schema (keys.go), not the topology: every
// command goes through redisroute, which decides which node serves it.
package redisstore
