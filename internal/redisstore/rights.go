package redisstore

import "github.com/apollo-platform/apollo/internal/redisroute"

// Rights are the commands Apollo's Redis user must be allowed to run:
// the router's own and the store's, those its scripts call included (a
// script's commands are checked against the user's rights as it runs).
// verify runs every instance as a user with exactly these (ACLRules), so
// a command added without its right fails there.
func Rights() []redisroute.Right {
	k := driverKey("rights-check")
	return append(redisroute.RouterRights(),
		// Sent by the store.
		redisroute.Right{"GET", k}, redisroute.Right{"MGET", k}, redisroute.Right{"SET", k, "1"}, redisroute.Right{"DEL", k},
		redisroute.Right{"EXISTS", k}, redisroute.Right{"TTL", k}, redisroute.Right{"PTTL", k}, redisroute.Right{"PEXPIRE", k, 1},
		redisroute.Right{"HGET", k, "f"}, redisroute.Right{"HMGET", k, "f"}, redisroute.Right{"HGETALL", k}, redisroute.Right{"HLEN", k},
		redisroute.Right{"HSET", k, "f", "v"}, redisroute.Right{"HDEL", k, "f"},
		redisroute.Right{"ZADD", k, 1, "m"}, redisroute.Right{"ZREM", k, "m"}, redisroute.Right{"ZSCORE", k, "m"}, redisroute.Right{"ZCARD", k},
		redisroute.Right{"ZRANGE", k, 0, 1}, redisroute.Right{"ZRANGEBYSCORE", k, 0, 1},
		redisroute.Right{"GEOADD", k, 0, 0, "m"}, redisroute.Right{"GEOSEARCH", k, "FROMLONLAT", 0, 0, "BYRADIUS", 1, "km"},
		redisroute.Right{"EVALSHA", "0000000000000000000000000000000000000000", 1, k}, redisroute.Right{"EVAL", "return 1", 1, k},
		// Called by the store's scripts besides those.
		redisroute.Right{"EXPIRE", k, 1}, redisroute.Right{"HEXISTS", k, "f"}, redisroute.Right{"INCR", k}, redisroute.Right{"INCRBY", k, 1},
		redisroute.Right{"ZREMRANGEBYSCORE", k, 0, 1},
	)
}

// ACLRules are the ACL SETUSER rules of a user with exactly Apollo's
// rights, on Apollo's keys and channels only (redisroute.KeyPattern: every
// key of keys.go begins with it).
func ACLRules() []string { return redisroute.ACLRules(Rights()) }
