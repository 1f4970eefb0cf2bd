package redisroute

import "testing"

func TestParseNodeRunReadsTheProcessAndItsKeys(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       nodeRun
		ok         bool
	}{
		{"a primary loading from its snapshot",
			"# Server\r\nrun_id:abc\r\n# Replication\r\nrole:master\r\n# Keyspace\r\ndb0:keys=12,expires=3,avg_ttl=0\r\ndb1:keys=3,expires=0,avg_ttl=0\r\n# Persistence\r\nloading:1\r\naof_enabled:0\r\nrdb_last_load_keys_loaded:7\r\n",
			nodeRun{Addr: "n", RunID: "abc", Primary: true, Keys: 15, Loading: true, Loaded: 7}, true},
		{"a replica with an append-only file, an empty keyspace", "run_id:abc\r\nrole:slave\r\n# Keyspace\r\nloading:0\r\naof_enabled:1\r\n",
			nodeRun{Addr: "n", RunID: "abc", AOF: true, Loaded: -1}, true},
		{"no run_id", "# Keyspace\r\ndb0:keys=1,expires=0\r\n", nodeRun{Addr: "n", Keys: 1, Loaded: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := parseNodeRun("n", tc.info); got != tc.want || ok != tc.ok {
				t.Errorf("parseNodeRun = %+v, %v, want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestJudgeRestart(t *testing.T) {
	primary := func(id string, keys int64) nodeRun { return nodeRun{RunID: id, Primary: true, Keys: keys, Loaded: -1} }
	back := func(keys, loaded int64, aof bool) nodeRun {
		return nodeRun{RunID: "b", Primary: true, Keys: keys, Loaded: loaded, AOF: aof}
	}
	replica := func(r nodeRun) nodeRun { r.Primary = false; return r }
	for _, tc := range []struct {
		name      string
		last, now nodeRun
		seen      bool
		want      restartVerdict
	}{
		{"first check", nodeRun{}, primary("a", 10), false, notRestarted},
		{"same process, keys gone (deleted, expired)", primary("a", 300), primary("a", 0), true, notRestarted},
		{"back from its append-only file", primary("a", 300), back(296, 0, true), true, restartKept},
		{"back from a snapshot with most keys", primary("a", 300), back(296, 290, false), true, restartKept},
		{"back from a snapshot with half", primary("a", 300), back(150, 150, false), true, restartKept},
		{"back empty, without persistence", primary("a", 300), back(0, 0, false), true, restartLost},
		{"back empty, keys made again since by heartbeats", primary("a", 300), back(290, 0, false), true, restartLost},
		{"back with an old snapshot", primary("a", 300), back(310, 120, false), true, restartLost},
		{"back with one key of three", primary("a", 3), back(1, 1, false), true, restartLost},
		{"back empty, empty before", primary("a", 0), back(0, 0, false), true, restartKept},
		{"Redis 6 (no keys loaded in INFO): the keys it has", primary("a", 300), back(0, -1, false), true, restartLost},
		{"a replica before: promoted after its restart (a failover)", replica(primary("a", 300)), back(0, 0, false), true, restartNotPrimary},
		{"a replica now: it copies its primary", primary("a", 300), replica(back(0, 0, false)), true, restartNotPrimary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeRestart(tc.last, tc.seen, tc.now); got != tc.want {
				t.Errorf("judgeRestart = %v, want %v", got, tc.want)
			}
		})
	}
}
